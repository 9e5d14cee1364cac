import type { Clock } from '../../platform/clock.ts';

/**
 * A bounded in-process cache in front of a database read, for the data
 * plane's per-request lookups (API keys, a tenant's provider keys).
 * Entries live `ttlMs` at most and are dropped on invalidation. A load that
 * was in flight when an invalidation arrived is returned to its caller but
 * not cached (the epoch check), so a revocation can never be undone by a
 * read that raced it. Past `maxEntries` the oldest entry is dropped (a Map
 * iterates in insertion order).
 */
export class LoadingCache<K, V> {
  readonly #entries = new Map<K, { value: V; expiresAt: number }>();
  readonly #load: (key: K) => Promise<V | undefined>;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  #epoch = 0;

  constructor(options: { load: (key: K) => Promise<V | undefined>; clock: Clock; ttlMs: number; maxEntries: number }) {
    this.#load = options.load;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
  }

  /** The cached value, without loading (the hot path: no promise). */
  peek(key: K): V | undefined {
    const hit = this.#entries.get(key);
    if (hit === undefined) return undefined;
    if (hit.expiresAt > this.#clock.now()) return hit.value;
    this.#entries.delete(key);
    return undefined;
  }

  async get(key: K): Promise<V | undefined> {
    const hit = this.peek(key);
    if (hit !== undefined) return hit;
    const epoch = this.#epoch;
    const value = await this.#load(key);
    if (value !== undefined && epoch === this.#epoch) {
      if (this.#entries.size >= this.#maxEntries) {
        const oldest = this.#entries.keys().next();
        if (!oldest.done) this.#entries.delete(oldest.value);
      }
      this.#entries.set(key, { value, expiresAt: this.#clock.now() + this.#ttlMs });
    }
    return value;
  }

  invalidate(key: K): void {
    this.#epoch++;
    this.#entries.delete(key);
  }

  /** Drops every entry (and, like invalidate, keeps racing loads out). */
  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
