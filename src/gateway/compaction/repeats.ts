import type { Message } from './messages.ts';

/**
 * The `repeats` strategy: a tool output or assistant text identical to an
 * earlier message (a file read twice, a test run repeated with the same
 * result) is replaced by a short reference to the earlier copy. Only texts
 * of `MIN_REPEAT_CHARS` or more are worth it (the reference costs about 25
 * tokens). The earlier copy is named by what does not move when turns are
 * dropped: its tool call id, or its role and first words.
 */
export const MIN_REPEAT_CHARS = 400;

export class RepeatIndex {
  /** Text -> how the first message holding it is named, and whether a later copy was seen. */
  readonly #first = new Map<string, { name: string; copied: boolean }>();

  /**
   * The reference replacing `text` when an earlier message held it, else
   * undefined (and `text` is remembered). The first copy is marked copied
   * whether or not the caller applies the reference (the latest exchange
   * never does), so what superseded-reads decides depends on the history
   * alone.
   */
  seen(text: string | undefined, message: Message, toolNames: ReadonlyMap<string, string>): string | undefined {
    if (text === undefined || text.length < MIN_REPEAT_CHARS) return undefined;
    const first = this.#first.get(text);
    if (first !== undefined) {
      first.copied = true;
      return `[gateway: identical to ${first.name} above; this repeated copy was removed]`;
    }
    this.#first.set(text, { name: describe(message, text, toolNames), copied: false });
    return undefined;
  }

  /** True when a later message repeated `text` (a reference may point at its first copy). */
  copied(text: string): boolean {
    return this.#first.get(text)?.copied === true;
  }

  /** Forgets `text` (its first copy was superseded): a later copy is then kept, never pointed at a removed one. */
  forget(text: string): void {
    this.#first.delete(text);
  }
}

function describe(message: Message, text: string, toolNames: ReadonlyMap<string, string>): string {
  const id = message.tool_call_id;
  if (message.role === 'tool' && typeof id === 'string' && id.length <= 64) {
    const name = toolNames.get(id);
    return `the result of tool call ${id}${name && name.length <= 64 ? ` (${name})` : ''}`;
  }
  // Never half a surrogate pair: the reference must stay valid UTF-16 (and so valid JSON text upstream).
  const words = text.trim().slice(0, 60).replace(/[\uD800-\uDBFF]$/, '').replace(/\s+/g, ' ').replace(/"/g, "'");
  return `the ${message.role === 'function' ? 'function result' : `${message.role} message`} that begins "${words}"`;
}
