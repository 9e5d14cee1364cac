import type { Clock } from '../../../platform/clock.ts';
import type { ResponseCache } from '../../cache/response-cache.ts';
import { type Call, compose, type Stage } from '../../pipeline/call.ts';
import type { ProviderAdapter } from '../../providers/types.ts';
import { inputCacheStage } from './input-cache.ts';
import { embeddingModelStage } from './model.ts';

/** The chat pipeline's stages that embeddings calls pass too, made once (pipeline/pipeline.ts): one usage writer, one ledger, one set of circuits. */
export interface SharedStages {
  usage: Stage;
  concurrency: Stage;
  requests: Stage;
  spending: Stage;
  upstream: Stage;
}

/**
 * Embeddings calls, in order: the chat pipeline's stages where they apply,
 * with two of their own.
 * 1. usage: the call's record (surface `embeddings`) and metrics;
 * 1a. concurrency: counted among the tenant's calls in progress;
 * 2. model: the embedding model named, resolved to its one target, or refused
 *    (model.ts);
 * 3. requests per minute;
 * 4. spending: tokens per day and USD per month, reserved for every input
 *    at the model's price and settled at what the provider billed;
 * 5. input cache: the inputs answered from the cache, and only the others
 *    sent (input-cache.ts);
 * 6. upstream: the provider call through the surface's adapter, retried as
 *    chat calls are, with no fallback.
 * Not here: compaction, prompt caching and routing's savings (nothing to
 * act on), routing and fallbacks (another model's vectors are not
 * comparable), the response cache and dedup (the input cache keeps each
 * vector instead, and two identical calls at once both go upstream).
 */
export function embeddingsPipeline(
  shared: SharedStages,
  deps: { adapters: ReadonlyMap<string, ProviderAdapter>; cache: ResponseCache; clock: Clock },
): (call: Call) => Promise<void> {
  return compose([
    shared.usage,
    shared.concurrency,
    embeddingModelStage(deps.adapters),
    shared.requests,
    shared.spending,
    inputCacheStage(deps.cache, deps.clock),
    shared.upstream,
  ]);
}
