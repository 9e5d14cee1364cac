import { FIVE_MINUTES, type PromptProfile } from './prompt-profile.ts';

/**
 * The providers' prompt caches as the savings accounting models them
 * (docs/gateway-prompt-caching.md, "What a saving is measured against"),
 * from one previous request of the same conversation: what a request would
 * read from the cache and write to it, in the token counts of
 * prompt-profile.ts, and what the cache holds afterwards.
 * - Explicit (Anthropic): a prefix is cached only up to a breakpoint whose
 *   prefix reaches the model's minimum; a request reads the longest cached
 *   prefix found at a breakpoint or up to 20 blocks before one, and writes
 *   from there to its last breakpoint.
 * - Automatic (OpenAI and other OpenAI-format providers): every prefix of
 *   1,024 tokens or more is cached; a request reads the prefix it shares
 *   with the previous one, in steps of 128 tokens from 1,024.
 * Entries live 5 minutes after their last use (1 hour where the client asked
 * for it). Only prefixes of the request at hand are carried forward, so a
 * state is bounded by one prompt's size.
 */
export interface CacheState {
  profile: PromptProfile;
  /** Explicit caches: the element indexes whose prefix is cached (increasing). Automatic caches: unused (every prefix is). */
  cached: readonly number[];
  /** Epoch ms of the request that left this state. */
  at: number;
}

export interface Modeled {
  /** Every input token (the reply's framing included). */
  prompt: number;
  read: number;
  write: number;
  state: CacheState;
}

const LOOKBACK_BLOCKS = 20;
const AUTOMATIC_MINIMUM = 1024;
const AUTOMATIC_STEP = 128;

/** The previous state when it is still alive and describes the same kind of cache. */
function alive(prev: CacheState | undefined, now: number): CacheState | undefined {
  if (prev === undefined) return undefined;
  return now - prev.at <= Math.max(FIVE_MINUTES, prev.profile.ttlMs) ? prev : undefined;
}

/** Anthropic-style caching, with breakpoints where `marked(i)` says (elements whose prefix is under `minimum` are ignored). */
export function modelExplicit(p: PromptProfile, marked: (i: number) => boolean, prev: CacheState | undefined, minimum: number, now: number): Modeled {
  const before = alive(prev, now);
  const n = p.hashes.length;
  const cachedBefore = new Set<number>();
  if (before) {
    const q = before.profile;
    for (const i of before.cached) if (i < n && i < q.hashes.length && q.hashes[i] === p.hashes[i]) cachedBefore.add(i);
  }
  const breakpoints: number[] = [];
  for (let i = 0; i < n; i++) if (marked(i) && p.tokens[i]! >= minimum) breakpoints.push(i);
  let readAt = -1;
  for (const b of breakpoints) {
    for (let q = b; q > readAt && p.blocks[b]! - p.blocks[q]! < LOOKBACK_BLOCKS; q--) {
      if (cachedBefore.has(q)) {
        readAt = q;
        break;
      }
    }
  }
  const read = readAt < 0 ? 0 : p.tokens[readAt]!;
  const last = breakpoints.at(-1);
  const write = last !== undefined && last > readAt ? p.tokens[last]! - read : 0;
  const cached = new Set(cachedBefore);
  if (readAt >= 0) cached.add(readAt);
  for (const b of breakpoints) if (b > readAt) cached.add(b);
  return { prompt: p.total, read, write, state: { profile: p, cached: [...cached].sort((a, b) => a - b), at: now } };
}

/** OpenAI-style automatic caching: the prefix shared with the previous request, in the provider's steps. */
export function modelAutomatic(p: PromptProfile, prev: CacheState | undefined, now: number): Modeled {
  const before = alive(prev, now);
  let shared = 0;
  if (before) {
    const q = before.profile.hashes;
    const n = Math.min(q.length, p.hashes.length);
    while (shared < n && q[shared] === p.hashes[shared]) shared++;
  }
  let tokens = shared === 0 ? 0 : p.tokens[shared - 1]!;
  // Automatic caching reads token by token: into an element compaction changed since the previous request sent it whole.
  const partial = before ? p.partial?.get(shared) : undefined;
  if (partial !== undefined && before!.profile.hashes[shared] === partial.hash) tokens += partial.tokens;
  const read = tokens < AUTOMATIC_MINIMUM ? 0 : AUTOMATIC_MINIMUM + Math.floor((tokens - AUTOMATIC_MINIMUM) / AUTOMATIC_STEP) * AUTOMATIC_STEP;
  return { prompt: p.total, read, write: 0, state: { profile: p, cached: [], at: now } };
}

/**
 * A stand-in for a previous request the accounting does not know (the
 * conversation's first call on this replica, or one forgotten), used only
 * when the provider reported cache reads, so the conversation is not new:
 * the same prompt without its latest exchange, cached at every breakpoint
 * before it and at its end. It assumes the client's own caching did as well
 * as it could, so that nothing is claimed on a guess.
 */
export function assumedPrevious(p: PromptProfile, marked: (i: number) => boolean, now: number): CacheState {
  const end = p.latestExchange;
  const cut: PromptProfile = {
    ...p,
    hashes: p.hashes.subarray(0, end),
    tokens: p.tokens.subarray(0, end),
    blocks: p.blocks.subarray(0, end),
    client: p.client.subarray(0, end),
    gateway: p.gateway.subarray(0, end),
  };
  const cached: number[] = [];
  for (let i = 0; i < end; i++) if (marked(i) || i === end - 1) cached.push(i);
  return { profile: cut, cached, at: now };
}
