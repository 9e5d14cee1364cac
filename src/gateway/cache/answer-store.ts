import type { CachedAnswer } from './cached-answer.ts';

/** Where answers are kept: in process (memory-store.ts) or in Redis (redis-store.ts). */
export interface AnswerStore {
  /** The live answer under `key`, or undefined. A store that cannot answer (Redis away) throws; the caller treats it as a miss. */
  get(tenantId: string, key: string): Promise<CachedAnswer | undefined>;
  /** Keeps `answer` for `ttlMs`; an answer larger than the store's entry cap, or than `maxEntryBytes` (the tenant's), is not kept. */
  set(tenantId: string, key: string, answer: CachedAnswer, ttlMs: number, maxEntryBytes?: number): Promise<void>;
}
