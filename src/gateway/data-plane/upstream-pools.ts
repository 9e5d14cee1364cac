import { type buildConnector, Pool } from 'undici';

export interface PoolSettings {
  connectTimeoutMs: number;
  /** Keep-alive connections per origin. */
  connections: number;
  /** Builds the connect function of a new pool (the platform's SSRF-safe connector in production), honouring the connect timeout. */
  connector: (origin: URL, connectTimeoutMs: number) => buildConnector.connector;
  /** Most origins with a pool at once; past it the least recently used pool is closed gracefully. */
  maxPools?: number;
}

/**
 * One undici keep-alive Pool per upstream origin (scheme, host and port),
 * created on first use. Tenants' base URLs add origins, so the number of
 * pools is bounded: the least recently used one is closed (its in-flight
 * requests finish) when a new origin would pass the bound.
 */
export class UpstreamPools {
  readonly #pools = new Map<string, Pool>();
  readonly #settings: PoolSettings;
  #lastOrigin: string | undefined;
  #lastPool: Pool | undefined;

  constructor(settings: PoolSettings) {
    this.#settings = settings;
  }

  get(baseUrl: URL): Pool {
    const origin = baseUrl.origin;
    // The common case, the same origin as the call before: already the most recently used.
    if (origin === this.#lastOrigin && this.#lastPool) return this.#lastPool;
    const pool = this.#pools.get(origin);
    if (pool) {
      this.#lastOrigin = origin;
      this.#lastPool = pool;
      // Most recently used last, so the first key is the one to close.
      this.#pools.delete(origin);
      this.#pools.set(origin, pool);
      return pool;
    }
    if (this.#pools.size >= (this.#settings.maxPools ?? 256)) {
      const [oldest, evicted] = this.#pools.entries().next().value as [string, Pool];
      this.#pools.delete(oldest);
      if (evicted === this.#lastPool) this.#lastPool = undefined;
      void evicted.close();
    }
    const created = new Pool(origin, {
      connections: this.#settings.connections,
      connect: this.#settings.connector(baseUrl, this.#settings.connectTimeoutMs),
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    this.#pools.set(origin, created);
    this.#lastOrigin = origin;
    this.#lastPool = created;
    return created;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((pool) => pool.close()));
    this.#pools.clear();
    this.#lastPool = undefined;
  }
}
