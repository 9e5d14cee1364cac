import { hash } from 'node:crypto';
import type { Clock } from '../../../platform/clock.ts';
import { canonicalJson } from '../../cache/canonical-json.ts';
import type { CachedAnswer } from '../../cache/cached-answer.ts';
import type { ResponseCache } from '../../cache/response-cache.ts';
import { costUsd } from '../../catalog/cost.ts';
import type { Call, CallTarget, Stage } from '../../pipeline/call.ts';
import type { TokenUsage } from '../../providers/types.ts';
import { EmbeddingsSurface } from './surface.ts';
import { answerBytes } from './vectors.ts';

/**
 * The format of an input's key. Bump it whenever what goes into a key, or
 * how, changes: entries under the old version are then never read again.
 */
export const INPUT_KEY_VERSION = 'embeddings/v1';

/**
 * The input cache: each text input of an embeddings call is looked up on
 * its own, under its tenant, the routed `provider/model`, the fields that
 * change a vector (`dimensions` and any the gateway does not know) and the
 * text itself, in the gateway's answer store (memory or Redis, the tenant's
 * settings.cache: enabled, TTL, entry size; X-Gateway-No-Cache bypasses
 * it). In order:
 * 1. bypass (no cache for the call, or token-array inputs): every input goes
 *    upstream as sent; `bypass`;
 * 2. each distinct text is looked up once (the same text twice in one
 *    request is sent once, and its second place answered from the first);
 * 3. all found: the answer is made from the cache alone, nothing sent, nothing
 *    paid: `hit`;
 * 4. otherwise one upstream call carries only the texts not found, in the
 *    client's order; each vector that comes back is stored with its share of
 *    the provider's prompt tokens (the count split by the inputs' lengths)
 *    and of the cost; `miss` when every input went, `partial` when some did.
 * The answer is reassembled in the client's order, in the client's encoding.
 * What was billed is what the provider counted for the inputs sent
 * (`usage.prompt_tokens`, X-Gateway-Cost); the inputs answered without being
 * sent are the saving (their stored tokens and cost: X-Gateway-Tokens-Saved,
 * X-Gateway-Cost-Saved, saved_cache_usd), and X-Gateway-Inputs-Cached says
 * how many of how many they were.
 */
export function inputCacheStage(cache: ResponseCache, clock: Clock): Stage {
  return async function answerInputsFromCache(call, next) {
    const surface = call.surface;
    const target = call.target;
    if (!(surface instanceof EmbeddingsSurface) || target === undefined) throw new Error('the input cache serves embeddings calls, after the model stage');
    const request = surface.embeddings;
    const inputs = request.inputs;
    const policy = cache.policy(call.tenant);
    if (call.noCache || !policy.enabled || !request.texts) {
      reused(call, 0, inputs.length);
      await next();
      answer(call, surface, surface.received!, call.usage?.promptTokens ?? 0);
      return;
    }
    const tenantId = call.tenant.tenantId;
    const texts = inputs as readonly string[];
    // Every part before the text is JSON or a fixed-format id, none with a NUL: no two inputs' keys share a preimage.
    const head = `${INPUT_KEY_VERSION}\0${tenantId}\0${JSON.stringify(target.ref)}\0${canonicalJson(request.keyed)}\0`;
    const keys = texts.map((text) => hash('sha256', head + text, 'base64url'));
    // Each input's first place in the request (its own, or an earlier identical text's), and the distinct ones.
    const firstOf = new Map<string, number>();
    const first = new Int32Array(keys.length);
    const distinct: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      const seen = firstOf.get(keys[i]!);
      if (seen === undefined) {
        firstOf.set(keys[i]!, i);
        distinct.push(i);
      }
      first[i] = seen ?? i;
    }
    const lookups = distinct.map((i) => cache.lookup(tenantId, keys[i]!, policy.ttlMs, 'embeddings'));
    // The memory store answers at once; Redis's answers are awaited together (one connection carries them in turn).
    const found = lookups.some((l) => l instanceof Promise) ? await Promise.all(lookups) : (lookups as (CachedAnswer | undefined)[]);

    const vectors = new Array<string>(keys.length);
    /** Each distinct input's tokens and cost, as stored (hits) or as its share of this call's (sent). */
    const tokens = new Float64Array(keys.length);
    const costs = new Float64Array(keys.length);
    const hit = new Uint8Array(keys.length);
    const sending: number[] = [];
    let oldest: number | undefined;
    let producer: string | undefined;
    for (let k = 0; k < distinct.length; k++) {
      const i = distinct[k]!;
      const entry = found[k];
      if (entry === undefined || typeof entry.completion !== 'string') {
        sending.push(i);
        continue;
      }
      vectors[i] = entry.completion;
      hit[i] = 1;
      tokens[i] = entry.usage?.promptTokens ?? 0;
      costs[i] = entry.costUsd ?? 0;
      oldest = Math.min(oldest ?? entry.createdAt, entry.createdAt);
      producer ??= entry.model;
    }

    // Known before the provider answers, so that a failed call says it too.
    call.cacheStatus = sending.length === 0 ? 'hit' : sending.length === keys.length ? 'miss' : 'partial';
    reused(call, keys.length - sending.length, keys.length);
    let billed = 0;
    if (sending.length > 0) {
      surface.sending = sending;
      await next();
      billed = call.usage?.promptTokens ?? 0;
      store(cache, call, target, keys, sending, texts, surface.received!, billed, { vectors, tokens, costs }, policy, clock.now());
    } else {
      // Nothing went upstream: nothing was billed, and the stored model answered.
      call.usage = undefined;
      call.costUsd = 0;
      call.modelUsed = producer;
    }

    // The inputs answered without being sent: the cache's, and each repeat of a text in the request.
    let saved = 0;
    let savedTokens = 0;
    for (let i = 0; i < keys.length; i++) {
      const from = first[i]!;
      if (from !== i) vectors[i] = vectors[from]!;
      else if (hit[i] === 0) continue;
      saved += costs[from]!;
      savedTokens += tokens[from]!;
    }
    call.saved.cache = saved;
    call.tokensSaved = savedTokens;
    if (oldest !== undefined) call.cacheAgeS = Math.max(0, Math.floor((clock.now() - oldest) / 1000));
    answer(call, surface, vectors, billed);
  };
}

/** X-Gateway-Inputs-Cached: how many of the inputs were answered without being sent. */
function reused(call: Call, count: number, of: number): void {
  call.replyHeaders.push('x-gateway-inputs-cached', `${count}/${of}`);
}

/**
 * The client's answer, kept by the surface as bytes (serve-call.ts sends
 * them; `call.result` stays unset), and the gateway's time so far (the
 * reassembly is its own work, not the provider's).
 */
function answer(call: Call, surface: EmbeddingsSurface, vectors: readonly string[], promptTokens: number): void {
  const model = call.modelUsed ?? call.target?.model ?? surface.embeddings.model;
  surface.answered = answerBytes(vectors, surface.embeddings.encoding, model, promptTokens);
  if (call.tenant.storeBodies) call.storedResponse = surface.answered.toString('utf8');
  call.overheadMs = performance.now() - call.startedAt - call.upstreamMs;
}

/**
 * The vectors that came back, each in its place and stored for the next
 * call: the provider's prompt tokens shared among the inputs sent in
 * proportion to their length (whole tokens that add up to its count), each
 * share priced at the catalog's price. A store that fails (Redis away) is
 * logged; the answer does not wait for it.
 */
function store(
  cache: ResponseCache,
  call: Call,
  target: CallTarget,
  keys: readonly string[],
  sending: readonly number[],
  texts: readonly string[],
  received: readonly string[],
  billed: number,
  into: { vectors: string[]; tokens: Float64Array; costs: Float64Array },
  policy: { ttlMs: number; maxEntryBytes: number },
  now: number,
): void {
  const shares = shareOut(
    billed,
    sending.map((i) => texts[i]!.length),
  );
  const tenantId = call.tenant.tenantId;
  const model = call.modelUsed ?? target.model;
  for (let k = 0; k < sending.length; k++) {
    const i = sending[k]!;
    const usage: TokenUsage = { promptTokens: shares[k]!, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 };
    const cost = costUsd(usage, target.entry);
    into.vectors[i] = received[k]!;
    into.tokens[i] = usage.promptTokens;
    into.costs[i] = cost ?? 0;
    const entry: CachedAnswer = { v: 1, format: 'embeddings', provider: target.provider.id, model, createdAt: now, usage, costUsd: cost, completion: received[k]! };
    try {
      const stored = cache.store.set(tenantId, keys[i]!, entry, policy.ttlMs, policy.maxEntryBytes);
      if (stored instanceof Promise) stored.catch((err: Error) => call.log.warn({ err: err.message }, 'embeddings cache: storing a vector failed'));
    } catch (err) {
      call.log.warn({ err: (err as Error).message }, 'embeddings cache: storing a vector failed');
    }
  }
}

/**
 * `total` shared out in proportion to `weights` (each at least 1: an empty
 * text still took a request's place), in whole numbers that add up to
 * `total`: each share is the rounded running total less the one before, so
 * it is within one of its exact part. Linear.
 */
export function shareOut(total: number, weights: readonly number[]): number[] {
  let sum = 0;
  for (const w of weights) sum += Math.max(1, w);
  const shares = new Array<number>(weights.length);
  let running = 0;
  let given = 0;
  for (let k = 0; k < weights.length; k++) {
    running += Math.max(1, weights[k]!);
    const upTo = Math.round((running / sum) * total);
    shares[k] = upTo - given;
    given = upTo;
  }
  return shares;
}
