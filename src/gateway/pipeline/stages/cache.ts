import type { CachedAnswer } from '../../cache/cached-answer.ts';
import type { ResponseCache } from '../../cache/response-cache.ts';
import type { Stage } from '../call.ts';

/**
 * The response cache: an identical earlier answer of the same tenant (same
 * surface, same routed model, same canonical request: the surface's
 * AnswerFormat.cacheKey) is replayed, streamed or not whatever form it was
 * stored in, in the surface's own format, at no cost; otherwise
 * the call goes on (a miss) and the dedup stage's flight stores the answer
 * once it is complete. `X-Gateway-No-Cache: true`, or the tenant's
 * settings.cache.enabled false, bypass both reading and writing.
 */
export function cacheStage(cache: ResponseCache): Stage {
  // Not an async function: a miss from the memory store goes on with no promise of this stage's own.
  return function answerFromCache(call, next) {
    const target = call.target;
    // A surface whose answers the cache cannot replay yet is neither read nor stored (dedup follows: no key, no flight).
    if (call.noCache || !target || !call.surface.stages.cache) return next();
    let found: CachedAnswer | undefined | Promise<CachedAnswer | undefined>;
    try {
      const policy = cache.policy(call.tenant);
      if (!policy.enabled) return next();
      const answers = call.surface.answers;
      const key = answers.cacheKey(call, target.ref);
      call.cacheKey = key;
      found = cache.lookup(call.tenant.tenantId, key, policy.ttlMs, answers.name);
    } catch (err) {
      return Promise.reject(err);
    }
    const answerOrGoOn = (answer: CachedAnswer | undefined): Promise<void> => {
      if (!answer) {
        call.cacheStatus = 'miss';
        return next();
      }
      cache.answer(call, answer);
      return Promise.resolve();
    };
    if (found instanceof Promise) return found.then(answerOrGoOn);
    try {
      return answerOrGoOn(found);
    } catch (err) {
      return Promise.reject(err);
    }
  };
}
