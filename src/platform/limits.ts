import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateSetting } from './config.ts';

export type LimitResult = { allowed: true } | { allowed: false; retryAfterMs: number };

/** A fixed-window bucket: `points` requests per key per window of `durationSeconds`. */
export interface RateLimiter {
  readonly name: string;
  consume(key: string): Promise<LimitResult>;
}

/**
 * In memory for a single process, or in Redis when replicas must share the
 * count. When Redis is unreachable the bucket falls back to per-process memory
 * rather than failing every request (an outage of Redis is no outage of login).
 */
export function createRateLimiter(name: string, setting: RateSetting, redis?: Redis): RateLimiter {
  const base = { points: setting.points, duration: setting.durationSeconds, keyPrefix: `rl:${name}` };
  const memory = new RateLimiterMemory(base);
  const limiter = redis ? new RateLimiterRedis({ ...base, storeClient: redis, insuranceLimiter: memory }) : memory;
  return {
    name,
    async consume(key: string): Promise<LimitResult> {
      try {
        await limiter.consume(key, 1);
        return { allowed: true };
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return { allowed: false, retryAfterMs: rejection.msBeforeNext };
        throw rejection;
      }
    },
  };
}
