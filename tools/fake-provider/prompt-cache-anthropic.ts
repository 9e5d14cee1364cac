import { type CacheFigures, IMAGE_TOKENS, PER_MESSAGE, PER_REPLY, PrefixHash, PrefixStore, tokensOf } from './prompt-cache.ts';

/**
 * Anthropic's prompt caching, simulated (Anthropic docs, "Prompt caching"):
 * - a prefix is cached only up to a block marked `cache_control`; at most 4
 *   such blocks per request (more: 400), and a `ttl: "1h"` one may not come
 *   after a 5-minute one (400); these two checks run whether or not the
 *   simulation is on, as Anthropic's do;
 * - the prefix is the request's canonical content in Anthropic's order:
 *   tools, then system, then messages, block by block (cache_control itself
 *   left out, so moving a breakpoint does not change the content);
 * - a breakpoint whose prefix is shorter than the model's minimum is ignored
 *   (1024 tokens; 2048 for Haiku 3 and 3.5 and Sonnet 4.6; 4096 for Haiku
 *   4.5 and Opus 4.5 and later);
 * - a read: the longest cached prefix found at a breakpoint or up to 20
 *   blocks before one ("the system checks for cache hits at all previous
 *   content block positions up to 20 blocks before each breakpoint");
 * - a write: every breakpoint past the read is cached, and the tokens from
 *   the read to the last breakpoint are reported as
 *   cache_creation_input_tokens; input_tokens is what is left;
 * - per API key and model, 5-minute TTL refreshed by each hit.
 */

type Json = Record<string, unknown>;

export interface Unit {
  /** The block's canonical text (what the hash chain takes in). */
  text: string;
  tokens: number;
  breakpoint: boolean;
}

const LOOKBACK = 20;
const MAX_BREAKPOINTS = 4;

/** The smallest prefix Anthropic caches for a model, in tokens. */
export function anthropicMinimum(model: string): number {
  if (/haiku-4|haiku-[5-9]|opus-4-[5-9]|opus-[5-9]/.test(model)) return 4096;
  if (/haiku|sonnet-4-[6-9]/.test(model)) return 2048;
  return 1024;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** The block as JSON without any cache_control, at any depth. */
const canonical = (value: unknown) => JSON.stringify(value, (key, v) => (key === 'cache_control' ? undefined : v));

/** Every cache_control of the request in prompt order (tools, system, messages; inside tool results too). */
function cacheControls(body: Json): Json[] {
  const found: Json[] = [];
  const visit = (block: unknown) => {
    if (!isObject(block)) return;
    if (isObject(block['cache_control'])) found.push(block['cache_control']);
    if (block['type'] === 'tool_result' && Array.isArray(block['content'])) block['content'].forEach(visit);
  };
  if (Array.isArray(body['tools'])) body['tools'].forEach(visit);
  if (Array.isArray(body['system'])) body['system'].forEach(visit);
  for (const message of Array.isArray(body['messages']) ? body['messages'] : []) {
    if (isObject(message) && Array.isArray(message['content'])) message['content'].forEach(visit);
  }
  return found;
}

/** The 400 Anthropic answers for the request's cache_control, or undefined when they are valid. */
export function checkCacheControl(body: Json): string | undefined {
  const controls = cacheControls(body);
  if (controls.length > MAX_BREAKPOINTS) return `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${controls.length}.`;
  const shortAt = controls.findIndex((c) => c['ttl'] !== '1h');
  if (shortAt !== -1 && controls.slice(shortAt).some((c) => c['ttl'] === '1h')) {
    return 'cache_control: a block with ttl="1h" must not come after a block with ttl="5m" (longer TTLs first).';
  }
  return undefined;
}

function blockTokens(block: Json): number {
  switch (block['type']) {
    case 'text':
      return typeof block['text'] === 'string' ? tokensOf(block['text']) : 0;
    case 'image':
    case 'document':
      return IMAGE_TOKENS;
    case 'tool_use':
      return tokensOf(String(block['name'] ?? '')) + tokensOf(JSON.stringify(block['input'] ?? {}));
    case 'tool_result': {
      const content = block['content'];
      if (typeof content === 'string') return tokensOf(content);
      if (!Array.isArray(content)) return 0;
      return content.reduce((sum: number, inner) => sum + (isObject(inner) ? blockTokens(inner) : 0), 0);
    }
    default:
      return tokensOf(canonical(block));
  }
}

const hasBreakpoint = (block: Json) =>
  isObject(block['cache_control']) ||
  (block['type'] === 'tool_result' && Array.isArray(block['content']) && block['content'].some((inner) => isObject(inner) && isObject(inner['cache_control'])));

/**
 * The request as the units the cache sees, in order; the first block of the
 * system prompt and of each message carries its framing tokens. Exported for
 * benchmarks that compare what two requests share as a prefix.
 */
export function promptUnits(body: Json): Unit[] {
  const out: Unit[] = [];
  for (const tool of Array.isArray(body['tools']) ? body['tools'] : []) {
    if (!isObject(tool)) continue;
    const text = canonical(tool);
    out.push({ text: `tool:${text}`, tokens: tokensOf(text), breakpoint: isObject(tool['cache_control']) });
  }
  const blocksOf = (role: string, content: unknown) => {
    const blocks: Json[] = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content.filter(isObject) : [];
    blocks.forEach((block, i) => {
      out.push({ text: `${role}:${canonical(block)}`, tokens: blockTokens(block) + (i === 0 ? PER_MESSAGE : 0), breakpoint: hasBreakpoint(block) });
    });
  };
  if (body['system'] !== undefined) blocksOf('system', body['system']);
  for (const message of Array.isArray(body['messages']) ? body['messages'] : []) {
    if (isObject(message)) blocksOf(String(message['role']), message['content']);
  }
  return out;
}

export class AnthropicPromptCache {
  readonly #stores = new Map<string, PrefixStore>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(ttlMs: number, now: () => number) {
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** What a valid request reads from and writes to the cache of `apiKey` (and the cache updated). */
  simulate(body: Json, apiKey: string): CacheFigures {
    const list = promptUnits(body);
    const model = String(body['model']);
    const minimum = anthropicMinimum(model);
    const chain = new PrefixHash(model);
    const cumulative: number[] = [];
    const hashes: string[] = [];
    const breakpoints: number[] = [];
    let total = 0;
    for (const [i, unit] of list.entries()) {
      total += unit.tokens;
      cumulative.push(total);
      hashes.push(chain.add(unit.text).add('\0').digest());
      if (unit.breakpoint && total >= minimum) breakpoints.push(i);
    }
    const promptTokens = total + PER_REPLY;
    if (breakpoints.length === 0) return { promptTokens, cacheReadTokens: 0, cacheWriteTokens: 0 };
    let store = this.#stores.get(apiKey);
    if (!store) {
      store = new PrefixStore(this.#ttlMs, this.#now);
      this.#stores.set(apiKey, store);
    }
    let readAt = -1;
    for (const b of breakpoints) {
      for (let p = b; p >= Math.max(0, b - LOOKBACK + 1) && p > readAt; p--) {
        if (store.hit(hashes[p]!)) {
          readAt = p;
          break;
        }
      }
    }
    const read = readAt === -1 ? 0 : cumulative[readAt]!;
    const last = breakpoints[breakpoints.length - 1]!;
    for (const b of breakpoints) if (b > readAt) store.put(hashes[b]!);
    return { promptTokens, cacheReadTokens: read, cacheWriteTokens: last > readAt ? cumulative[last]! - read : 0 };
  }

  clear(): void {
    this.#stores.clear();
  }
}
