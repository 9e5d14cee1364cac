/**
 * The `superseded-reads` strategy (safe and above): an earlier result of a
 * read tool is replaced by a short reference to a later read that
 * supersedes it, even when their contents differ (the file was edited
 * since): the later one is the same read (same tool, same arguments as
 * canonical JSON, else as the raw string) or contains the earlier text
 * whole (a whole file read after a range of it).
 *
 * Equal texts are left to `repeats`, which removes the later copy instead
 * (the earlier one already sits in the providers' cached prefix). An
 * earlier result that a later copy points at is never superseded, and once
 * superseded its text is forgotten by the repeat index, so no reference
 * ever points at a removed text.
 *
 * Only the first later read that supersedes a result is considered, and
 * only when the supersession pays for itself on the very turn it appears
 * (see `pays`): the decision depends on the history up to that read alone,
 * so it never changes on later turns.
 *
 * Bounded work on hostile content: only results of the read tools, of
 * `MIN_READ_CHARS` or more, are compared; each new read is compared for
 * containment with at most the `CONTAINS_LOOKBACK` previous reads, and all
 * containment checks of a request together look at no more than
 * `CONTAINS_BUDGET` characters (checks past it are skipped, in history order,
 * so what was decided stays decided).
 */
export const MIN_READ_CHARS = 400;
export const CONTAINS_LOOKBACK = 64;
export const CONTAINS_BUDGET = 4_000_000;
/** Arguments longer than this are compared as raw strings (a path is short; canonicalizing is linear anyway). */
const MAX_CANONICAL_ARGS = 4_096;

export interface ReadResult {
  /** Output position of the result. */
  at: number;
  /** Its text, whitespace normalized. */
  text: string;
  /** Tool name and canonical arguments. */
  key: string;
}

export class SupersededReads {
  readonly #latestByKey = new Map<string, ReadResult>();
  readonly #recent: (ReadResult | undefined)[] = [];
  #budget = CONTAINS_BUDGET;

  /**
   * A new read result `later`: the candidates it supersedes (each taken out
   * of consideration for good, whether or not the caller applies it).
   * `register` says whether it becomes a candidate itself (not a repeat copy).
   */
  arrive(later: ReadResult, register: boolean): ReadResult[] {
    const superseded: ReadResult[] = [];
    const same = this.#latestByKey.get(later.key);
    if (same !== undefined && same.text !== later.text) superseded.push(same);
    const from = Math.max(0, this.#recent.length - CONTAINS_LOOKBACK);
    for (let r = this.#recent.length - 1; r >= from; r--) {
      const earlier = this.#recent[r];
      if (earlier === undefined || earlier === same || earlier.text.length >= later.text.length) continue;
      const cost = later.text.length + earlier.text.length;
      if (cost > this.#budget) continue;
      this.#budget -= cost;
      if (later.text.includes(earlier.text)) superseded.push(earlier);
    }
    for (const s of superseded) this.#remove(s);
    if (register && later.text.length >= MIN_READ_CHARS) {
      this.#latestByKey.set(later.key, later);
      this.#recent.push(later);
    }
    return superseded;
  }

  #remove(result: ReadResult): void {
    if (this.#latestByKey.get(result.key) === result) this.#latestByKey.delete(result.key);
    const r = this.#recent.lastIndexOf(result);
    if (r >= 0) this.#recent[r] = undefined;
  }
}

/**
 * Whether replacing a result pays on the turn it happens, against a client
 * whose history the provider has cached (the most it can cost): the
 * `between` tokens after the replaced result were cache reads (0.1x input)
 * and must be written again (Anthropic 1.25x, OpenAI 1x), as must the
 * reference (`note` tokens); the result's `removed` tokens (its size less
 * the reference) are no longer read. On Anthropic's prices that is
 * 0.1 x (removed + note) >= 1.15 x between + 1.25 x note, that is
 * removed >= 11.5 x (between + note); OpenAI's (removed >= 9 x (between +
 * note)) is then met too. Every later turn it saves the removed tokens again.
 */
export function pays(removed: number, between: number, note: number): boolean {
  return 2 * removed >= 23 * (between + note);
}

/** The key of a read: its tool and arguments (canonical JSON when they parse, else the raw string). */
export function readKey(name: string, args: unknown): string {
  const raw = typeof args === 'string' ? args : (JSON.stringify(args) ?? '');
  return `${name}\u0000${canonicalJson(raw)}`;
}

/**
 * The JSON text with object keys sorted and no whitespace, or the text
 * itself when it does not parse or is long. Written with its own stack:
 * client JSON may nest thousands deep, and recursion on it would overflow.
 */
export function canonicalJson(text: string): string {
  if (text.length > MAX_CANONICAL_ARGS) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  let out = '';
  // Each entry: a literal to write, or a value to serialize.
  const stack: ({ literal: string } | { value: unknown })[] = [{ value }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if ('literal' in item) {
      out += item.literal;
      continue;
    }
    const v = item.value;
    if (Array.isArray(v)) {
      stack.push({ literal: ']' });
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] });
        if (i > 0) stack.push({ literal: ',' });
      }
      stack.push({ literal: '[' });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v).sort();
      stack.push({ literal: '}' });
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ value: (v as Record<string, unknown>)[keys[i]!] });
        stack.push({ literal: `${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:` });
      }
      stack.push({ literal: '{' });
    } else out += JSON.stringify(v) ?? 'null';
  }
  return out;
}
