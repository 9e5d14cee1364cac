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

/** The part of the pool table one tenant's base URLs may take (GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT shares each pool's connections). */
export const POOLS_TENANT_SHARE = 1 / 8;

interface Entry {
  pool: Pool;
  /** The pools made for the same tenant (the one whose call made it), least recently used first; undefined: no tenant's. */
  owned: Map<string, Entry> | undefined;
  owner: string | undefined;
}

/**
 * One undici keep-alive Pool per upstream origin (scheme, host and port),
 * created on first use. Tenants' base URLs add origins, so the number of
 * pools is bounded: the least recently used one is closed (its in-flight
 * requests finish) when a new origin would pass the bound. A pool is
 * counted against the tenant whose call made it, and no tenant may have
 * more than an eighth of the table: past it, its own least recently used
 * pool is closed for the new one, so one tenant's many base URLs cannot
 * close the pools every other tenant's calls keep warm. (A pool one tenant
 * made and others use, such as a provider's public origin, may be closed
 * by its maker's churn only when no one used it for longer than the
 * maker's other pools; the next call opens it again.)
 */
export class UpstreamPools {
  readonly #pools = new Map<string, Entry>();
  readonly #owned = new Map<string, Map<string, Entry>>();
  readonly #settings: PoolSettings;
  readonly #maxPools: number;
  readonly #perTenant: number;
  #lastOrigin: string | undefined;
  #lastPool: Pool | undefined;

  constructor(settings: PoolSettings) {
    this.#settings = settings;
    this.#maxPools = settings.maxPools ?? 256;
    this.#perTenant = Math.max(1, Math.floor(this.#maxPools * POOLS_TENANT_SHARE));
  }

  /** Origins with a pool. */
  get size(): number {
    return this.#pools.size;
  }

  /** Whether `origin` has a pool now (for tests). */
  has(origin: string): boolean {
    return this.#pools.has(origin);
  }

  /** The pool of `baseUrl`'s origin, made for `tenantId`'s call when there is none. */
  get(baseUrl: URL, tenantId?: string): Pool {
    const origin = baseUrl.origin;
    // The common case, the same origin as the call before: already the most recently used.
    if (origin === this.#lastOrigin && this.#lastPool) return this.#lastPool;
    const entry = this.#pools.get(origin);
    if (entry) {
      this.#lastOrigin = origin;
      this.#lastPool = entry.pool;
      // Most recently used last, so the first key is the one to close.
      this.#pools.delete(origin);
      this.#pools.set(origin, entry);
      if (entry.owned) {
        entry.owned.delete(origin);
        entry.owned.set(origin, entry);
      }
      return entry.pool;
    }
    const mine = tenantId === undefined ? undefined : this.#owned.get(tenantId);
    // The tenant's own least recently used pool when it has its share, else the table's when it is full.
    if (mine !== undefined && mine.size >= this.#perTenant) this.#close(mine.keys().next().value as string);
    else if (this.#pools.size >= this.#maxPools) this.#close(this.#pools.keys().next().value as string);
    let owned = tenantId === undefined ? undefined : this.#owned.get(tenantId);
    const created = new Pool(origin, {
      connections: this.#settings.connections,
      connect: this.#settings.connector(baseUrl, this.#settings.connectTimeoutMs),
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    if (tenantId !== undefined && owned === undefined) {
      owned = new Map();
      this.#owned.set(tenantId, owned);
    }
    const made: Entry = { pool: created, owned, owner: tenantId };
    this.#pools.set(origin, made);
    owned?.set(origin, made);
    this.#lastOrigin = origin;
    this.#lastPool = created;
    return created;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((entry) => entry.pool.close()));
    this.#pools.clear();
    this.#owned.clear();
    this.#lastPool = undefined;
  }

  /** Closes an origin's pool gracefully (its requests in flight finish). */
  #close(origin: string): void {
    const entry = this.#pools.get(origin);
    if (entry === undefined) return;
    this.#pools.delete(origin);
    if (entry.owned) {
      entry.owned.delete(origin);
      if (entry.owned.size === 0 && entry.owner !== undefined) this.#owned.delete(entry.owner);
    }
    if (entry.pool === this.#lastPool) this.#lastPool = undefined;
    void entry.pool.close();
  }
}
