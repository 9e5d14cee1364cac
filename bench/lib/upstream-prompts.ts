import { normalizeWhitespace } from '../../src/gateway/compaction/whitespace.ts';
import { promptUnits } from '../../tools/fake-provider/prompt-cache-anthropic.ts';
import { PER_REPLY } from '../../tools/fake-provider/prompt-cache.ts';
import { promptSequence } from '../../tools/fake-provider/prompt-cache-openai.ts';

/**
 * Two checks on the bodies the fake provider received (the prompt as it
 * went upstream), for the savings benchmark:
 * - rewrites: per turn, the tokens of the session's previous upstream prompt
 *   that this turn's prompt no longer shares as a common prefix. A client
 *   that only appends causes none; an edit in the middle of the history
 *   (compaction) makes the provider read its cache only up to the edit and
 *   write everything after it again. Measured as the fake's caches see a
 *   prompt: OpenAI, the token sequence (tools, then messages with their
 *   framing; the reply's framing left out); Anthropic, the cache's units
 *   (each tool, system block and message block, cache_control left out),
 *   a unit shared only when it is the same whole. A model change (routing)
 *   is not counted: the measure compares prompts, whatever their model.
 * - the latest exchange: the last assistant message and every tool result
 *   after it (Anthropic: the tool_use blocks of the last assistant turn and
 *   the tool_result blocks after it) must equal the client's, whitespace
 *   normalization (src/gateway/compaction/whitespace.ts) and cache_control
 *   aside.
 * Both are linear in the prompt's size.
 */

type Json = Record<string, unknown>;
export type Format = 'openai' | 'anthropic';

/** The previous upstream prompt of the session, to compare the next one with. */
export class RewriteMeter {
  readonly #format: Format;
  #previous: { keys: (number | string)[]; tokens: number[] } | undefined;
  /** Tokens rewritten, summed over turns. */
  total = 0;

  constructor(format: Format) {
    this.#format = format;
  }

  /** A new session: nothing to compare the next prompt with. */
  startSession(): void {
    this.#previous = undefined;
  }

  /** Adds this prompt's rewrites of the previous one; returns them. */
  add(body: Json): number {
    const next = this.#format === 'openai' ? openAiKeys(body) : anthropicKeys(body);
    const prev = this.#previous;
    this.#previous = next;
    if (prev === undefined) return 0;
    let shared = 0;
    const n = Math.min(prev.keys.length, next.keys.length);
    while (shared < n && prev.keys[shared] === next.keys[shared]) shared++;
    let rewritten = 0;
    for (let i = shared; i < prev.tokens.length; i++) rewritten += prev.tokens[i]!;
    this.total += rewritten;
    return rewritten;
  }
}

function openAiKeys(body: Json): { keys: number[]; tokens: number[] } {
  const keys = promptSequence(body).slice(0, -PER_REPLY);
  return { keys, tokens: new Array<number>(keys.length).fill(1) };
}

function anthropicKeys(body: Json): { keys: string[]; tokens: number[] } {
  const units = promptUnits(body);
  return { keys: units.map((u) => u.text), tokens: units.map((u) => u.tokens) };
}

/** JSON without cache_control, text whitespace-normalized, string content as one text part. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (key, v) => {
    if (key === 'cache_control') return undefined;
    if (key === 'content' && typeof v === 'string') return v === '' ? [] : [{ type: 'text', text: normalizeWhitespace(v) }];
    if (key === 'text' && typeof v === 'string') return normalizeWhitespace(v);
    return v;
  });
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const listOf = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

/** The latest exchange of a body in `format`, canonical; '' when there is no assistant message yet. */
export function latestExchange(format: Format, body: Json): string {
  const messages = listOf(body['messages']);
  let last = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!['role'] === 'assistant') {
      last = i;
      break;
    }
  }
  if (last === -1) return '';
  if (format === 'openai') {
    const exchange = [messages[last]!];
    for (let i = last + 1; i < messages.length && messages[i]!['role'] === 'tool'; i++) exchange.push(messages[i]!);
    return canonical(exchange.map((m) => ({ role: m['role'], content: m['content'] ?? null, tool_calls: m['tool_calls'], tool_call_id: m['tool_call_id'] })));
  }
  const blocks = listOf(messages[last]!['content']).filter((b) => b['type'] === 'tool_use');
  for (let i = last + 1; i < messages.length; i++) {
    for (const block of listOf(messages[i]!['content'])) if (block['type'] === 'tool_result') blocks.push(block);
  }
  return canonical(blocks);
}

/** Whether the last message's last block (or, in a tool_result, its last inner block) carries a cache_control: the client's breakpoint arrived. */
export function lastBlockMarked(format: Format, body: Json): boolean {
  const last = listOf(body['messages']).at(-1);
  const block = listOf(last?.['content']).at(-1);
  if (block === undefined) return false;
  if (isObject(block['cache_control'])) return true;
  return format === 'anthropic' && block['type'] === 'tool_result' && isObject(listOf(block['content']).at(-1)?.['cache_control']);
}
