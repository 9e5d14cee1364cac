import { countTokens as countO200k, setMergeCacheSize } from 'gpt-tokenizer/encoding/o200k_base';
import { countByPieces, countByPiecesPausing } from './token-pieces.ts';

/**
 * Special tokens' spellings ("<|endoftext|>") in a prompt are text like any
 * other, as the providers count a user's text: gpt-tokenizer's default
 * throws on them.
 */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

const countPart = (text: string) => countO200k(text, AS_TEXT);

// gpt-tokenizer remembers the merged tokens of up to 100,000 pieces by default; pieces of up to about 500 bytes
// (token-pieces.ts) made that up to about 130 MB that clients could fill. 10,000 counts the benchmark corpus as fast.
setMergeCacheSize(10_000);

/** Characters counted at once when there is no limit to stop at (cuts are exact: token-pieces.ts). */
const CHUNK = 16_384;

/**
 * Token counts for what the gateway decides on its own (compaction budgets
 * and savings, context-window fits, prompt-cache breakpoints). OpenAI's
 * current models use o200k_base, so counts for them are exact for text,
 * except inside a run of 128 or more letters, whitespace or signs with no
 * break (token-pieces.ts: counted in parts, linear where gpt-tokenizer is
 * quadratic, within a token per 128 characters of the run). No public
 * tokenizer exists for Anthropic, Mistral, Llama or DeepSeek models: for
 * those the same o200k count is the documented approximation (within about
 * 10 to 20% on English and code); the provider's reported usage, not this
 * count, is what a call is priced from.
 */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : countByPieces(text, countPart, Number.POSITIVE_INFINITY, CHUNK);
}

/**
 * countTokens(text) while it is at most `limit`; past it, some number above
 * `limit` (counting stops soon after the limit is passed: a fit or a
 * breakpoint needs no more, and a long text then costs what `limit` tokens do).
 */
export function countTokensUpTo(text: string, limit: number): number {
  if (text.length === 0) return 0;
  // About four characters a token: parts a little longer than what is left to count, at least a few hundred characters.
  const chunk = Math.min(CHUNK, Math.max(512, Math.ceil(limit) * 4));
  return countByPieces(text, countPart, limit, chunk);
}

/**
 * Characters counted between two hand-backs of the event loop by the
 * pausing counts: 5 to 10 ms of counting here (about 75 ns of CPU a character).
 */
export const SLICE = 65_536;
/** Lets the event loop run what waits (other calls' I/O and timers) before the count goes on. */
export const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** countTokensUpTo, handing the event loop back every SLICE characters or so. */
export function countTokensUpToPausing(text: string, limit: number): Promise<number> {
  const chunk = Math.min(SLICE / 4, Math.max(512, Math.ceil(limit) * 4));
  return countByPiecesPausing(text, countPart, limit, chunk, SLICE, yieldToLoop);
}

/** Per-message framing OpenAI adds to a chat prompt (role and separators), as its cookbook counts it. */
const PER_MESSAGE = 3;
const PER_REPLY = 3;

/**
 * The prompt tokens of a chat request's messages (and tool definitions, as
 * their JSON): text parts counted with the tokenizer, image parts as a flat
 * 85 tokens (OpenAI's low-detail price), framing per message.
 */
export function countPromptTokens(messages: readonly unknown[], tools?: unknown, count: (text: string) => number = countTokens): number {
  let total = PER_REPLY;
  for (const message of messages) {
    total += PER_MESSAGE;
    if (typeof message !== 'object' || message === null) continue;
    const m = message as Record<string, unknown>;
    total += countContent(m.content, count);
    if (typeof m.name === 'string') total += count(m.name);
    if (m.tool_calls !== undefined) total += count(JSON.stringify(m.tool_calls));
  }
  if (tools !== undefined && tools !== null) total += count(JSON.stringify(tools));
  return total;
}

/**
 * countPromptTokens while it is at most `limit`; past it, some number above
 * `limit`, and the texts after the one that passed it are not counted.
 */
export function countPromptTokensUpTo(messages: readonly unknown[], tools: unknown, limit: number): number {
  let left = limit;
  return countPromptTokens(messages, tools, (text) => {
    if (left < 0) return 0;
    const tokens = countTokensUpTo(text, left);
    left -= tokens;
    return tokens;
  });
}

/**
 * countPromptTokensUpTo, handing the event loop back every SLICE characters
 * or so: a prompt of megabytes would otherwise hold every other call up for
 * as long as it takes to count (75 to 170 ms a megabyte here).
 */
export async function countPromptTokensUpToPausing(messages: readonly unknown[], tools: unknown, limit: number): Promise<number> {
  const texts: string[] = [];
  countPromptTokens(messages, tools, (text) => {
    texts.push(text);
    return 0;
  });
  const counts = new Map<string, number>();
  let left = limit;
  for (const text of texts) {
    if (left < 0) break;
    let tokens = counts.get(text);
    if (tokens === undefined) {
      tokens = await countTokensUpToPausing(text, left);
      counts.set(text, tokens);
    }
    left -= tokens;
  }
  return countPromptTokens(messages, tools, (text) => counts.get(text) ?? 0);
}

/**
 * countPromptTokens without the tokenizer: each text's length over 3, which
 * leans high (o200k averages about 4 characters a token on English prose and
 * about 3 on code and JSON). Linear and cheap where tokenizing costs about
 * 22 ms per MB on the event loop: for what an estimate serves, budget
 * reservations, which are settled with the provider's own count.
 */
export function estimatePromptTokens(messages: readonly unknown[], tools?: unknown): number {
  return countPromptTokens(messages, tools, (text) => Math.ceil(text.length / 3));
}

function countContent(content: unknown, count: (text: string) => number): number {
  if (typeof content === 'string') return count(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const p = part as Record<string, unknown>;
    if (typeof p.text === 'string') total += count(p.text);
    else if (p.type === 'image_url') total += 85;
    else total += count(JSON.stringify(p));
  }
  return total;
}
