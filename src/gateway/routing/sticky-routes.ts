import type { Redis } from 'ioredis';
import type { Clock } from '../../platform/clock.ts';
import type { Tier } from '../catalog/models.ts';

/** The model a session was routed to, and the tier it was routed at (a session's tier rises, never falls). */
export interface StickyRoute {
  model: string;
  tier: Tier;
}

/**
 * Routed models by session (X-Gateway-Session-Id), so that a conversation
 * stays on one model and its provider-side prompt cache stays warm. Each
 * read and write renews the entry's time to live.
 */
export interface StickyRoutes {
  /** At once in memory, a promise from Redis (a promise made only to be awaited cost every routed call). */
  get(key: string, ttlMs: number): StickyRoute | undefined | Promise<StickyRoute | undefined>;
  /** Stores `route` (a session of `tenantId`'s) unless the session already holds a higher tier; returns what the session holds afterwards. */
  raise(tenantId: string, key: string, route: StickyRoute, ttlMs: number): Promise<StickyRoute>;
}

/** How many sessions the in-process table keeps (GATEWAY_STICKY_SESSIONS), and of them one tenant's (GATEWAY_STICKY_SESSIONS_PER_TENANT). */
export interface StickyBounds {
  sessions: number;
  perTenant: number;
}

/** Redis when replicas share one (REDIS_URL), else this process's memory. */
export function stickyRoutes(redis: Redis | undefined, clock: Clock, bounds: StickyBounds): StickyRoutes {
  return redis ? new RedisStickyRoutes(redis) : new MemoryStickyRoutes(clock, bounds);
}

const encode = (r: StickyRoute) => `${r.tier}|${r.model}`;
function decode(value: string | null | undefined): StickyRoute | undefined {
  if (!value) return undefined;
  const tier = Number(value[0]);
  if (value[1] !== '|' || (tier !== 1 && tier !== 2 && tier !== 3)) return undefined;
  return { tier, model: value.slice(2) };
}

/**
 * A read renews its entry's TTL in place, and moves the entry to the end
 * of the map (the most recently used, evicted last) at most once per
 * MOVE_MS, so eviction follows use to within a second. Moving it on every
 * read, a delete and a set, filled the map's table with deleted slots, and
 * a busy session's calls reallocated the table every few calls: under
 * benchmark 5's load (one session) this file's own CPU time fell from 0.9 %
 * to 0.5 % of the event loop's busy time (CPU profiles).
 */
const MOVE_MS = 1000;

interface Entry {
  route: StickyRoute;
  expiresAt: number;
  /** When the entry last went to the end of the map. */
  movedAt: number;
  /** Its tenant's entries (the same objects), least recently used first. */
  own: Map<string, Entry>;
  tenantId: string;
}

/**
 * The table in memory, bounded (`bounds.sessions`, the least recently used
 * forgotten first) with a share per tenant (`bounds.perTenant`): a tenant
 * that holds its share replaces its own least recently used session, never
 * another tenant's, so one tenant's many session ids cannot push every
 * other tenant's conversations off their model. Each entry is in two maps,
 * the table's and its tenant's, in the same order of use; a tenant's map
 * goes with its last entry.
 */
class MemoryStickyRoutes implements StickyRoutes {
  readonly #entries = new Map<string, Entry>();
  readonly #byTenant = new Map<string, Map<string, Entry>>();
  readonly #clock: Clock;
  readonly #bounds: StickyBounds;
  constructor(clock: Clock, bounds: StickyBounds) {
    this.#clock = clock;
    this.#bounds = bounds;
  }

  get(key: string, ttlMs: number): StickyRoute | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    const now = this.#clock.now();
    if (entry.expiresAt <= now) {
      this.#forget(key, entry);
      return undefined;
    }
    entry.expiresAt = now + ttlMs;
    if (now - entry.movedAt >= MOVE_MS) {
      entry.movedAt = now;
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      entry.own.delete(key);
      entry.own.set(key, entry);
    }
    return entry.route;
  }

  async raise(tenantId: string, key: string, route: StickyRoute, ttlMs: number): Promise<StickyRoute> {
    const held = this.get(key, ttlMs);
    if (held !== undefined && held.tier > route.tier) return held;
    const entry = this.#entries.get(key);
    // Held (and renewed just now): the route replaced in place; else a new entry, the most recent.
    if (entry !== undefined) {
      entry.route = route;
      return route;
    }
    let own = this.#byTenant.get(tenantId);
    // The tenant's own least recently used session when it holds its share; else the table's when it is full.
    if (own !== undefined && own.size >= this.#bounds.perTenant) {
      const oldest = own.keys().next().value!;
      this.#forget(oldest, own.get(oldest)!);
    } else if (this.#entries.size >= this.#bounds.sessions) {
      const oldest = this.#entries.keys().next().value!;
      this.#forget(oldest, this.#entries.get(oldest)!);
    }
    own = this.#byTenant.get(tenantId);
    if (own === undefined) {
      own = new Map();
      this.#byTenant.set(tenantId, own);
    }
    const now = this.#clock.now();
    const made: Entry = { route, expiresAt: now + ttlMs, movedAt: now, own, tenantId };
    this.#entries.set(key, made);
    own.set(key, made);
    return route;
  }

  /** Sessions held now (for tests): all of them, or one tenant's. */
  size(tenantId?: string): number {
    return tenantId === undefined ? this.#entries.size : (this.#byTenant.get(tenantId)?.size ?? 0);
  }

  #forget(key: string, entry: Entry): void {
    this.#entries.delete(key);
    entry.own.delete(key);
    if (entry.own.size === 0) this.#byTenant.delete(entry.tenantId);
  }
}

/** Keeps the held route when its tier is higher, else stores the new one; either way renews the TTL. Atomic, so two replicas cannot lower a session's tier. */
const RAISE = `
local held = redis.call('GET', KEYS[1])
if held and tonumber(string.sub(held, 1, 1)) > tonumber(string.sub(ARGV[1], 1, 1)) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return held
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]`;

class RedisStickyRoutes implements StickyRoutes {
  readonly #redis: Redis;
  constructor(redis: Redis) {
    this.#redis = redis;
  }

  async get(key: string, ttlMs: number): Promise<StickyRoute | undefined> {
    return decode(await this.#redis.getex(key, 'PX', ttlMs));
  }

  /** Redis bounds what it keeps itself (its maxmemory and policy); keys expire with their TTL. */
  async raise(_tenantId: string, key: string, route: StickyRoute, ttlMs: number): Promise<StickyRoute> {
    const held = (await this.#redis.eval(RAISE, 1, key, encode(route), ttlMs)) as string;
    return decode(held) ?? route;
  }
}
