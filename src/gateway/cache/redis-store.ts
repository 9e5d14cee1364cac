import type { Redis } from 'ioredis';
import type { AnswerStore } from './answer-store.ts';
import { type CachedAnswer, parseCachedAnswer } from './cached-answer.ts';

/**
 * The store replicas share: one Redis string per answer, `gw:cache:<tenant>:<key>`
 * (the tenant in the name lets an operator drop one tenant's entries with
 * SCAN), expiring with its TTL (PX), so Redis's own eviction policy bounds
 * the total. An answer over `maxEntryBytes` is not stored.
 */
export class RedisAnswerStore implements AnswerStore {
  readonly #redis: Redis;
  readonly #maxEntryBytes: number;

  constructor(options: { redis: Redis; maxEntryBytes: number }) {
    this.#redis = options.redis;
    this.#maxEntryBytes = options.maxEntryBytes;
  }

  async get(tenantId: string, key: string): Promise<CachedAnswer | undefined> {
    const text = await this.#redis.get(redisKey(tenantId, key));
    return text === null ? undefined : parseCachedAnswer(text);
  }

  async set(tenantId: string, key: string, answer: CachedAnswer, ttlMs: number, maxEntryBytes = this.#maxEntryBytes): Promise<void> {
    const text = JSON.stringify(answer);
    if (Buffer.byteLength(text) > Math.min(maxEntryBytes, this.#maxEntryBytes)) return;
    await this.#redis.set(redisKey(tenantId, key), text, 'PX', ttlMs);
  }
}

const redisKey = (tenantId: string, key: string) => `gw:cache:${tenantId}:${key}`;
