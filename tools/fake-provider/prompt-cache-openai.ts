import { createHash } from 'node:crypto';
import { type CacheFigures, encodingOf, IMAGE_TOKENS, PER_MESSAGE, PER_REPLY, PrefixHash, PrefixStore } from './prompt-cache.ts';

/**
 * OpenAI's automatic prompt caching, simulated (OpenAI docs, "Prompt
 * caching"): no markers; prompts of 1024 tokens or more are cached, and a
 * hit covers the longest cached prefix in steps of 1024, 1152, 1280, ...
 * (128-token increments). Caches live on machines: a request is routed by a
 * hash of its first 256 tokens combined with `prompt_cache_key`.
 *
 * The model, deterministic: N machines (64 by default), each its own store
 * (5-minute TTL refreshed by hits), entries scoped per API key and model.
 * A request goes to machine = hash(API key, first 256 tokens) mod N, with
 * `prompt_cache_key` in the hash when it is set: the routing the docs
 * describe, without the load balancing's randomness.
 * - Without a key, a session sent turn by turn starts every turn with the
 *   same tokens (tools, system prompt, first message), so every turn lands
 *   where the previous one was and reads its prefix; so do different
 *   prompts that start alike (one system prompt for many sessions), which
 *   then share one machine.
 * - With a key, the key also picks the machine: prompts that start alike
 *   but carry different keys spread over the fleet, and a session with a
 *   stable key still finds its own prefix.
 * Not simulated: a busy prefix (and key) overflowing to other machines past
 * about 15 requests a minute, which real fleets do, and which costs some
 * hits with or without a key.
 *
 * The prompt as tokens: the tool definitions (their JSON), then per message
 * 3 framing tokens and its content (text parts encoded, an image 85
 * tokens), its name and tool_calls (JSON), then 3 for the reply: the count
 * the gateway makes (src/gateway/tokens.ts), so prompt_tokens agree.
 */

type Json = Record<string, unknown>;

const MIN_TOKENS = 1024;
const STEP = 128;
const ROUTING_PREFIX = 256;
/** Framing tokens are negative: they never collide with a real token id. */
const ROLE_MARK: Record<string, number> = { system: -1, developer: -2, user: -3, assistant: -4, tool: -5, function: -6 };
const FRAME = -9;
const REPLY = -10;

/** The prompt as a token sequence (its length is prompt_tokens). */
export function promptSequence(body: Json): number[] {
  const out: number[] = [];
  const push = (tokens: readonly number[]) => {
    for (const t of tokens) out.push(t);
  };
  const tools = body['tools'];
  if (tools !== undefined && tools !== null) push(encodingOf(JSON.stringify(tools)));
  for (const message of Array.isArray(body['messages']) ? body['messages'] : []) {
    const m = (typeof message === 'object' && message !== null ? message : {}) as Json;
    out.push(ROLE_MARK[String(m['role'])] ?? -7);
    for (let i = 1; i < PER_MESSAGE; i++) out.push(FRAME);
    const content = m['content'];
    if (typeof content === 'string') push(encodingOf(content));
    else if (Array.isArray(content)) {
      for (const part of content as Json[]) {
        if (typeof part !== 'object' || part === null) continue;
        if (typeof part['text'] === 'string') push(encodingOf(part['text']));
        else if (part['type'] === 'image_url') for (let i = 0; i < IMAGE_TOKENS; i++) out.push(-100 - imageId(part));
        else push(encodingOf(JSON.stringify(part)));
      }
    }
    if (typeof m['name'] === 'string') push(encodingOf(m['name']));
    if (m['tool_calls'] !== undefined) push(encodingOf(JSON.stringify(m['tool_calls'])));
  }
  for (let i = 0; i < PER_REPLY; i++) out.push(REPLY);
  return out;
}

/** A small number standing for the image (so two different images do not share a prefix). */
const imageId = (part: Json) => createHash('sha256').update(JSON.stringify(part['image_url'])).digest().readUInt16BE(0);

const bytesOf = (tokens: number[], from: number, to: number) => new Uint8Array(Int32Array.from(tokens.slice(from, to)).buffer);
const bucket = (text: string, n: number) => createHash('sha256').update(text).digest().readUInt32BE(0) % n;

export class OpenAiPromptCache {
  readonly #machines: PrefixStore[];

  constructor(machines: number, ttlMs: number, now: () => number) {
    if (!Number.isInteger(machines) || machines < 1) throw new Error('prompt cache: machines must be a whole number >= 1');
    this.#machines = Array.from({ length: machines }, () => new PrefixStore(ttlMs, now));
  }

  /** What a valid request reads from the cache (and the cache updated); OpenAI bills no writes. */
  simulate(body: Json, apiKey: string): CacheFigures & { machine: number } {
    const tokens = promptSequence(body);
    const promptTokens = tokens.length;
    const key = typeof body['prompt_cache_key'] === 'string' && body['prompt_cache_key'] !== '' ? body['prompt_cache_key'] : undefined;
    const head = createHash('sha256').update(bytesOf(tokens, 0, ROUTING_PREFIX)).digest('base64url');
    const machine = bucket(key === undefined ? `${apiKey}\0${head}` : `${apiKey}\0${head}\0${key}`, this.#machines.length);
    if (promptTokens < MIN_TOKENS) return { promptTokens, cacheReadTokens: 0, cacheWriteTokens: 0, machine };
    const store = this.#machines[machine]!;
    const chain = new PrefixHash(`${apiKey}\0${String(body['model'])}`);
    const ladder: string[] = [];
    let fed = 0;
    for (let length = MIN_TOKENS; length <= promptTokens; length += STEP) {
      chain.add(bytesOf(tokens, fed, length));
      fed = length;
      ladder.push(chain.digest());
    }
    let read = 0;
    for (let i = ladder.length - 1; i >= 0; i--) {
      if (store.hit(ladder[i]!)) {
        read = MIN_TOKENS + i * STEP;
        break;
      }
    }
    for (const hash of ladder) store.put(hash);
    return { promptTokens, cacheReadTokens: read, cacheWriteTokens: 0, machine };
  }

  clear(): void {
    for (const store of this.#machines) store.clear();
  }
}
