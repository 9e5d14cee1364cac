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
  /** Stores `route` unless the session already holds a higher tier; returns what the session holds afterwards. */
  raise(key: string, route: StickyRoute, ttlMs: number): Promise<StickyRoute>;
}

/** Redis when replicas share one (REDIS_URL), else this process's memory. */
export function stickyRoutes(redis: Redis | undefined, clock: Clock): StickyRoutes {
  return redis ? new RedisStickyRoutes(redis) : new MemoryStickyRoutes(clock);
}

const encode = (r: StickyRoute) => `${r.tier}|${r.model}`;
function decode(value: string | null | undefined): StickyRoute | undefined {
  if (!value) return undefined;
  const tier = Number(value[0]);
  if (value[1] !== '|' || (tier !== 1 && tier !== 2 && tier !== 3)) return undefined;
  return { tier, model: value.slice(2) };
}

/** Sessions remembered at most per process (the least recently used forgotten first). */
export const MAX_SESSIONS = 100_000;
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
}

class MemoryStickyRoutes implements StickyRoutes {
  readonly #entries = new Map<string, Entry>();
  readonly #clock: Clock;
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  get(key: string, ttlMs: number): StickyRoute | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    const now = this.#clock.now();
    if (entry.expiresAt <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    entry.expiresAt = now + ttlMs;
    if (now - entry.movedAt >= MOVE_MS) {
      entry.movedAt = now;
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry.route;
  }

  async raise(key: string, route: StickyRoute, ttlMs: number): Promise<StickyRoute> {
    const held = this.get(key, ttlMs);
    if (held !== undefined && held.tier > route.tier) return held;
    const entry = this.#entries.get(key);
    // Held (and renewed just now): the route replaced in place; else a new entry, the most recent.
    if (entry !== undefined) entry.route = route;
    else {
      if (this.#entries.size >= MAX_SESSIONS) this.#entries.delete(this.#entries.keys().next().value!);
      const now = this.#clock.now();
      this.#entries.set(key, { route, expiresAt: now + ttlMs, movedAt: now });
    }
    return route;
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

  async raise(key: string, route: StickyRoute, ttlMs: number): Promise<StickyRoute> {
    const held = (await this.#redis.eval(RAISE, 1, key, encode(route), ttlMs)) as string;
    return decode(held) ?? route;
  }
}
