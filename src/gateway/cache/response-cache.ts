import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.ts';
import type { GatewayConfig } from '../config.ts';
import type { TenantContext } from '../data-plane/tenant-context.ts';
import type { SurfaceName } from '../surfaces/surface.ts';
import type { Call } from '../pipeline/call.ts';
import type { AnswerStore } from './answer-store.ts';
import { type CachedAnswer, formatOf } from './cached-answer.ts';
import type { Flight } from './flight.ts';
import { type FlightOwner, InFlight } from './in-flight.ts';
import { MemoryAnswerStore } from './memory-store.ts';
import { RedisAnswerStore } from './redis-store.ts';
import { RemoteFlights } from './remote-flights.ts';
import { chargeReuse, sendAnswer } from './replay.ts';

/** What the cache does for one tenant: the gateway's defaults (GATEWAY_CACHE_*) under the tenant's settings.cache. */
export interface CachePolicy {
  enabled: boolean;
  dedup: boolean;
  ttlMs: number;
  /** Larger answers are served but not stored (the tenant's bound, within the gateway's). */
  maxEntryBytes: number;
}

/**
 * The response cache and in-flight dedup, shared by their two stages: the
 * store (Redis when REDIS_URL is set, else the in-process LRU), the flights
 * in progress, and each tenant's policy.
 */
export class ResponseCache {
  readonly store: AnswerStore;
  readonly flights: InFlight;
  readonly #config: GatewayConfig['cache'];
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #remote: RemoteFlights | undefined;

  constructor(deps: { config: GatewayConfig; clock: Clock; log: Logger; redis: Redis | undefined }) {
    const config = deps.config.cache;
    this.#config = config;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.store = deps.redis
      ? new RedisAnswerStore({ redis: deps.redis, maxEntryBytes: config.maxEntryBytes })
      : new MemoryAnswerStore({ clock: deps.clock, maxBytes: config.maxBytes, maxEntryBytes: config.maxEntryBytes, tenantSharePercent: config.tenantSharePercent });
    this.#remote = deps.redis ? new RemoteFlights({ redis: deps.redis, leaseMs: config.dedupLeaseMs, log: deps.log }) : undefined;
    this.flights = new InFlight({
      remote: this.#remote,
      log: deps.log,
      store: (owner, flight) => this.#keep(owner, flight),
      fromStore: async (call) => {
        const policy = this.policy(call.tenant);
        const answer = policy.enabled && call.cacheKey ? await this.lookup(call.tenant.tenantId, call.cacheKey, policy.ttlMs, call.surface.answers.name) : undefined;
        if (answer) this.answer(call, answer);
        return answer !== undefined;
      },
      // A flight holds no more of an answer than could be stored (policy(), without making its object on every call).
      maxHeld: (tenant) => Math.min(tenant.settings.cache?.max_entry_bytes ?? this.#config.maxEntryBytes, this.#config.maxEntryBytes),
    });
  }

  policy(tenant: TenantContext): CachePolicy {
    const own = tenant.settings.cache;
    const enabled = own?.enabled ?? this.#config.enabled;
    return {
      enabled,
      dedup: enabled && (own?.dedup ?? true),
      ttlMs: (own?.ttl_seconds ?? this.#config.ttlSeconds) * 1000,
      maxEntryBytes: Math.min(own?.max_entry_bytes ?? this.#config.maxEntryBytes, this.#config.maxEntryBytes),
    };
  }

  /**
   * The live answer under `key`, or undefined. An entry older than the
   * tenant's TTL now is a miss even if its store still has it (the TTL was
   * lowered since), and so is one of another surface's format than
   * `format` (keys are versioned per surface: this only guards the store).
   * A store that fails (Redis away) is a miss, logged.
   */
  lookup(tenantId: string, key: string, ttlMs: number, format: SurfaceName): CachedAnswer | undefined | Promise<CachedAnswer | undefined> {
    const missed = (err: unknown) => {
      this.#log.warn({ err: (err as Error).message }, 'cache: reading the store failed; answering as a miss');
      return undefined;
    };
    const live = (answer: CachedAnswer | undefined) =>
      answer && this.#clock.now() - answer.createdAt < ttlMs && formatOf(answer) === format ? answer : undefined;
    let found: CachedAnswer | undefined | Promise<CachedAnswer | undefined>;
    try {
      found = this.store.get(tenantId, key);
    } catch (err) {
      return missed(err);
    }
    // The memory store answers at once: no promise to make and wait for.
    return found instanceof Promise ? found.then(live, missed) : live(found);
  }

  /** Answers a call with a stored answer (a hit): replayed in the shape asked for, nothing billed, its age told. */
  answer(call: Call, answer: CachedAnswer): void {
    call.cacheStatus = 'hit';
    call.cacheAgeS = Math.max(0, Math.floor((this.#clock.now() - answer.createdAt) / 1000));
    chargeReuse(call, answer);
    sendAnswer(call, answer, answer.costUsd === undefined ? undefined : 0);
  }

  close(): void {
    this.#remote?.close();
  }

  /** A flight's complete answer, stored for the tenant's TTL (only successful, complete answers reach here). */
  #keep(owner: FlightOwner, flight: Flight): void | Promise<void> {
    const policy = this.policy(owner.tenant);
    const outcome = flight.outcome;
    if (!policy.enabled || !outcome || owner.noCache) return;
    const format = flight.format.name;
    const answer: CachedAnswer = {
      v: 1,
      // Chat Completions' entries carry no format (the default), so they stay as they were.
      ...(format === 'chat.completions' ? {} : { format }),
      provider: outcome.provider ?? outcome.target?.provider.id ?? '',
      model: outcome.modelUsed ?? outcome.target?.model ?? '',
      createdAt: this.#clock.now(),
      usage: outcome.usage,
      costUsd: outcome.costUsd,
      ...flight.answer(),
    };
    return this.store.set(owner.tenant.tenantId, flight.key, answer, policy.ttlMs, policy.maxEntryBytes);
  }
}
