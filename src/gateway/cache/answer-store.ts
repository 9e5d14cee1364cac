import type { CachedAnswer } from './cached-answer.ts';

/**
 * Where answers are kept: in process (memory-store.ts), which answers at
 * once, or in Redis (redis-store.ts), which answers with a promise. Every
 * call reads and most write it: a promise the memory store made only to be
 * awaited cost each call a few allocations and turns of the microtask queue.
 */
export interface AnswerStore {
  /** The live answer under `key`, or undefined. A store that cannot answer (Redis away) throws or rejects; the caller treats it as a miss. */
  get(tenantId: string, key: string): CachedAnswer | undefined | Promise<CachedAnswer | undefined>;
  /** Keeps `answer` for `ttlMs`; an answer larger than the store's entry cap, or than `maxEntryBytes` (the tenant's), is not kept. */
  set(tenantId: string, key: string, answer: CachedAnswer, ttlMs: number, maxEntryBytes?: number): void | Promise<void>;
}
