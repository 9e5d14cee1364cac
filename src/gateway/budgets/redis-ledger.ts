import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.ts';
import {
  type Amounts,
  type BudgetLedger,
  type CounterSpec,
  type CounterState,
  counterName,
  EPSILON,
  isSeeded,
  type Reservation,
  type ReserveOutcome,
  type SeedCounter,
} from './ledger.ts';
import type { MemoryLedger } from './memory-ledger.ts';
import { READ, RESERVE, SEED, SETTLE } from './redis-scripts.ts';

type Reply = (string | number)[];

/** The scripts as ioredis commands (EVALSHA, falling back to EVAL once per connection); the first argument is the number of keys. */
interface BudgetCommands {
  gatewayBudgetReserve(...args: (string | number)[]): Promise<Reply>;
  gatewayBudgetSettle(...args: (string | number)[]): Promise<number>;
  gatewayBudgetSeed(...args: (string | number)[]): Promise<number>;
  gatewayBudgetRead(...args: (string | number)[]): Promise<Reply>;
}

/** Seeding loads at most this many counters before a reservation gives up (each load settles one; a call has at most six). */
const MAX_SEED_ROUNDS = 8;
/** A Redis outage is logged at most this often. */
const WARN_EVERY_MS = 10_000;

/**
 * The ledger replicas share. Every call's check-and-reserve is one Lua
 * script over all its counters; settling is another. When Redis cannot be
 * reached the ledger falls back to the process's own (`insurance`): limits
 * then hold per replica rather than failing every call, and the outage is
 * logged.
 */
export class RedisLedger implements BudgetLedger {
  readonly #redis: BudgetCommands;
  readonly #insurance: MemoryLedger;
  readonly #seed: SeedCounter;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #reservationTtlMs: number;
  /** Reservation ids: this process's random prefix and a sequence. */
  readonly #idPrefix = randomBytes(6).toString('base64url');
  #sequence = 0;
  #warnedAt = Number.NEGATIVE_INFINITY;

  constructor(options: { redis: Redis; insurance: MemoryLedger; seed: SeedCounter; clock: Clock; log: Logger; reservationTtlMs: number }) {
    const redis = options.redis;
    redis.defineCommand('gatewayBudgetReserve', { lua: RESERVE });
    redis.defineCommand('gatewayBudgetSettle', { lua: SETTLE });
    redis.defineCommand('gatewayBudgetSeed', { lua: SEED, numberOfKeys: 1 });
    redis.defineCommand('gatewayBudgetRead', { lua: READ });
    this.#redis = redis as unknown as BudgetCommands;
    this.#insurance = options.insurance;
    this.#seed = options.seed;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#reservationTtlMs = options.reservationTtlMs;
  }

  async reserve(counters: readonly CounterSpec[], estimate: Amounts, now: number): Promise<ReserveOutcome> {
    const keys = counterKeys(counters);
    const id = `${this.#idPrefix}:${++this.#sequence}`;
    const args: (string | number)[] = [keys.length, ...keys, now, id, now + this.#reservationTtlMs, EPSILON];
    for (const counter of counters) {
      args.push(counter.limit, estimate[counter.kind], isSeeded(counter.kind) ? '1' : '0', this.#expiry(counter));
    }
    let reply: Reply;
    try {
      for (let round = 0; ; round++) {
        reply = await this.#redis.gatewayBudgetReserve(...args);
        if (reply[0] !== 'seed' || round === MAX_SEED_ROUNDS) break;
        await this.#seedOne(counters[Number(reply[1]) - 1]!);
      }
    } catch (err) {
      this.#warn(err);
      return this.#insurance.reserve(counters, estimate, now);
    }
    if (reply[0] === 'refused') {
      const i = Number(reply[1]) - 1;
      return { ok: false, counter: counters[i]!, state: { used: Number(reply[2]), reserved: Number(reply[3]) } };
    }
    if (reply[0] !== 'ok') throw new Error(`budget counters could not be seeded after ${MAX_SEED_ROUNDS} rounds`);
    const states: CounterState[] = counters.map((_, i) => ({ used: Number(reply[1 + 2 * i]), reserved: Number(reply[2 + 2 * i]) }));
    return { ok: true, reservation: new RedisReservation(this, counters, keys, id), states };
  }

  async read(counters: readonly CounterSpec[], now: number): Promise<CounterState[]> {
    const keys = counterKeys(counters);
    try {
      for (let round = 0; ; round++) {
        const reply = await this.#redis.gatewayBudgetRead(keys.length, ...keys, now);
        const unseeded = counters.findIndex((c, i) => isSeeded(c.kind) && reply[2 + 3 * i] !== '1');
        if (unseeded === -1 || round === MAX_SEED_ROUNDS) {
          return counters.map((_, i) => ({ used: Number(reply[3 * i]), reserved: Number(reply[1 + 3 * i]) }));
        }
        await this.#seedOne(counters[unseeded]!);
      }
    } catch (err) {
      this.#warn(err);
      return this.#insurance.read(counters, now);
    }
  }

  /** Called by a reservation: never throws (a settle lost to an outage is corrected when the reservation expires). */
  async settleReservation(counters: readonly CounterSpec[], keys: string[], id: string, actual: Amounts): Promise<void> {
    const args: (string | number)[] = [keys.length, ...keys, id];
    for (const counter of counters) args.push(actual[counter.kind], this.#expiry(counter));
    try {
      await this.#redis.gatewayBudgetSettle(...args);
    } catch (err) {
      this.#warn(err);
    }
  }

  async #seedOne(counter: CounterSpec): Promise<void> {
    const spent = await this.#seed(counter);
    await this.#redis.gatewayBudgetSeed(hashKey(counter), spent, this.#expiry(counter));
  }

  /** A counter's keys outlive its window by the reservation TTL, so that a late settle still lands. */
  #expiry(counter: CounterSpec): number {
    return counter.window.end + this.#reservationTtlMs;
  }

  #warn(err: unknown): void {
    const now = this.#clock.now();
    if (now - this.#warnedAt < WARN_EVERY_MS) return;
    this.#warnedAt = now;
    this.#log.warn({ err: (err as Error).message }, 'budgets: Redis unreachable; limits are enforced per process until it is back');
  }
}

class RedisReservation implements Reservation {
  readonly #ledger: RedisLedger;
  readonly #counters: readonly CounterSpec[];
  readonly #keys: string[];
  readonly #id: string;
  #settled = false;

  constructor(ledger: RedisLedger, counters: readonly CounterSpec[], keys: string[], id: string) {
    this.#ledger = ledger;
    this.#counters = counters;
    this.#keys = keys;
    this.#id = id;
  }

  async settle(actual: Amounts): Promise<void> {
    if (this.#settled) return;
    this.#settled = true;
    await this.#ledger.settleReservation(this.#counters, this.#keys, this.#id, actual);
  }
}

const hashKey = (counter: CounterSpec) => `gw:budget:${counterName(counter)}:${counter.window.id}`;

/** Per counter: its hash, then its reservations' expiry set. */
function counterKeys(counters: readonly CounterSpec[]): string[] {
  const keys: string[] = [];
  for (const counter of counters) {
    const hash = hashKey(counter);
    keys.push(hash, `${hash}:exp`);
  }
  return keys;
}
