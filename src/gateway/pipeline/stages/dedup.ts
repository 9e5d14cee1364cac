import type { ResponseCache } from '../../cache/response-cache.ts';
import type { Stage } from '../call.ts';

/**
 * In-flight dedup: a call whose identical twin (same cache key, so same
 * tenant) is still upstream waits for it and shares its answer, streamed
 * chunk by chunk as it arrives (cache/flight.ts); across replicas through
 * Redis (cache/remote-flights.ts). Calls the cache stage bypassed
 * (X-Gateway-No-Cache, cache off) go straight on; with settings.cache.dedup
 * false a call still goes through a flight of its own, which records the
 * answer for the cache.
 */
export function dedupStage(cache: ResponseCache): Stage {
  return function joinInFlight(call, next) {
    if (call.cacheKey === undefined) return next();
    return cache.flights.run(call, next, cache.policy(call.tenant).dedup);
  };
}
