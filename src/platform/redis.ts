import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** How long start-up waits for Redis before going on without it. */
const READY_TIMEOUT_MS = 5000;

/**
 * A Redis client for state that replicas share (rate limits, revocations),
 * connected before the service answers. ioredis is loaded here, only when
 * REDIS_URL is set. Commands fail fast while Redis is away
 * (no offline queue), so callers fall back to per-process state.
 */
export async function connectRedis(url: string, log: Logger): Promise<Redis> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: false });
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis error'));
  // Until the client is connected every command fails over to the per-process bucket, so a fresh
  // replica would not share limits; wait for it (bounded: Redis being down must not stop start-up).
  await redisReady(redis, READY_TIMEOUT_MS, log);
  return redis;
}

function redisReady(redis: Redis, timeoutMs: number, log: Logger): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      log.warn(`redis not ready after ${timeoutMs / 1000} s; rate limits stay per process until it is`);
      resolve();
    }, timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
