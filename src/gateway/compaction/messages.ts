/**
 * What compaction needs to know about chat messages (OpenAI format), read
 * defensively: the route validated only each message's role, so content,
 * tool_calls and ids may be anything and are left alone when unexpected.
 */
export type Message = Record<string, unknown> & { role: string };

/** Only the model's own words and tool outputs are rewritten: system, developer and user messages never are. */
export function isRewritable(message: Message): boolean {
  return message.role === 'assistant' || message.role === 'tool' || message.role === 'function';
}

export function isToolResult(message: Message): boolean {
  return message.role === 'tool' || message.role === 'function';
}

/** The ids of an assistant message's tool calls (empty for any other message). */
export function toolCallIds(message: Message): string[] {
  if (message.role !== 'assistant' || !Array.isArray(message.tool_calls)) return [];
  const ids: string[] = [];
  for (const call of message.tool_calls) {
    const id = (call as { id?: unknown } | null)?.id;
    if (typeof id === 'string') ids.push(id);
  }
  return ids;
}

/** The function name of each tool call, by call id. */
export function toolCallNames(message: Message, into: Map<string, string>): void {
  if (message.role !== 'assistant' || !Array.isArray(message.tool_calls)) return;
  for (const call of message.tool_calls) {
    const c = call as { id?: unknown; function?: { name?: unknown } } | null;
    if (typeof c?.id === 'string' && typeof c.function?.name === 'string') into.set(c.id, c.function.name);
  }
}

/**
 * `content` with `rewrite` applied to its text: the string itself, or each
 * text part of an array (images and other parts untouched). The same value
 * comes back when nothing changed, so callers can tell by identity.
 */
export function mapText(content: unknown, rewrite: (text: string) => string): unknown {
  if (typeof content === 'string') return rewrite(content);
  if (!Array.isArray(content)) return content;
  let out: unknown[] | undefined;
  for (let i = 0; i < content.length; i++) {
    const part = content[i] as { type?: unknown; text?: unknown } | null;
    if (part === null || typeof part !== 'object' || typeof part.text !== 'string') continue;
    const text = rewrite(part.text);
    if (text === part.text) continue;
    out ??= content.slice();
    out[i] = { ...part, text };
  }
  return out ?? content;
}

/** The content as one text when it is all text (a string, or only text parts), else undefined. */
export function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || content.length === 0) return undefined;
  let text = '';
  for (const part of content) {
    const p = part as { type?: unknown; text?: unknown } | null;
    if (p === null || typeof p !== 'object' || p.type !== 'text' || typeof p.text !== 'string') return undefined;
    text += p.text;
  }
  return text;
}

/** True when the content carries something: text other than whitespace, or any non-text part. */
export function hasSubstance(content: unknown): boolean {
  if (typeof content === 'string') return content.trim() !== '';
  if (!Array.isArray(content)) return false;
  return content.some((part) => {
    const p = part as { text?: unknown } | null;
    return p !== null && typeof p === 'object' && (typeof p.text !== 'string' || p.text.trim() !== '');
  });
}

/** A run of messages `[start, end)` that is kept or dropped whole. */
export interface Unit {
  start: number;
  end: number;
}

/**
 * The messages cut into units that keep every tool call with its results:
 * an assistant message with tool calls reaches to the last of its results
 * (and further, when a message inside reaches further), a legacy
 * `function_call` to the `function` message after it; any other message is
 * a unit of its own.
 */
export function groupUnits(messages: readonly Message[]): Unit[] {
  const resultAt = new Map<string, number>();
  for (let i = 0; i < messages.length; i++) {
    const id = messages[i]!.tool_call_id;
    if (messages[i]!.role === 'tool' && typeof id === 'string') resultAt.set(id, i);
  }
  const reach = (j: number): number => {
    const m = messages[j]!;
    let last = j;
    for (const id of toolCallIds(m)) last = Math.max(last, resultAt.get(id) ?? j);
    if (m.role === 'assistant' && m.function_call != null && messages[j + 1]?.role === 'function') last = Math.max(last, j + 1);
    return last;
  };
  const units: Unit[] = [];
  for (let start = 0; start < messages.length; ) {
    let end = start + 1;
    for (let j = start; j < end; j++) end = Math.max(end, reach(j) + 1);
    units.push({ start, end });
    start = end;
  }
  return units;
}

/**
 * Where the latest exchange starts: the last assistant message (everything
 * from it on is what the model is answering now, and is never changed beyond
 * its whitespace); the length of the list when there is no assistant message.
 */
export function latestExchangeStart(messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'assistant') return i;
  return messages.length;
}

/** The characters of a content's text (a string, or its text parts). */
export function textChars(content: unknown): number {
  if (typeof content === 'string') return content.length;
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content) {
    const text = (part as { text?: unknown } | null)?.text;
    if (typeof text === 'string') total += text.length;
  }
  return total;
}

/** The content replaced by a gateway note: a string stays a string, an array becomes one text part. */
export function noteContent(content: unknown, note: string): unknown {
  return typeof content === 'string' ? note : [{ type: 'text', text: note }];
}

/** The function name and arguments of each tool call, by call id. */
export function toolCallArguments(message: Message, into: Map<string, { name: string; args: unknown }>): void {
  if (message.role !== 'assistant' || !Array.isArray(message.tool_calls)) return;
  for (const call of message.tool_calls) {
    const c = call as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    if (typeof c?.id === 'string' && typeof c.function?.name === 'string') into.set(c.id, { name: c.function.name, args: c.function.arguments });
  }
}
