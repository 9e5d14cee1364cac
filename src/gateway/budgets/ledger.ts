import { LIMIT_FIELD, LIMIT_KINDS, type LimitKind, type Limits } from '../settings/limits.ts';
import { type BudgetWindow, windowOf } from './windows.ts';

/**
 * The ledger the budgets stage reserves in and settles to: one counter per
 * limit set (a key's or its tenant's), each in its current window. A call
 * is admitted only if every counter has room for its estimate; the check
 * and the reservation of all counters are one atomic step (in process: one
 * synchronous block; in Redis: one Lua script), so concurrent calls cannot
 * overshoot together. Settling replaces a call's estimate by what it really
 * spent.
 */
export type LimitScope = 'key' | 'tenant';

export interface CounterSpec {
  scope: LimitScope;
  kind: LimitKind;
  tenantId: string;
  /** Set for a key's counter. */
  keyId: string | undefined;
  limit: number;
  window: BudgetWindow;
  /** counterName's answer, kept once asked (the budgets stage reuses a key's counters while their windows last). */
  name?: string;
  /** The limit as its x-ratelimit-limit-* header says it, kept once written (limit-replies.ts). */
  limitText?: string;
  /** The whole seconds to the window's end last written in x-ratelimit-reset-*, and how (limit-replies.ts). */
  resetSeconds?: number;
  resetText?: string;
}

/** A counter as read: settled consumption and what calls in flight hold. */
export interface CounterState {
  used: number;
  reserved: number;
}

/** One figure per kind: a call's estimate, or what it really spent. */
export type Amounts = Record<LimitKind, number>;

export interface Reservation {
  /** Releases the estimate and counts what the call really spent (in the window it was reserved in). Never throws (nor rejects). */
  settle(actual: Amounts): void | Promise<void>;
}

export type ReserveOutcome =
  | { ok: true; reservation: Reservation; /** Each counter after this reservation, in the order given. */ states: CounterState[] }
  | { ok: false; /** The first counter without room. */ counter: CounterSpec; state: CounterState };

export interface BudgetLedger {
  /** The outcome at once where the ledger can tell without waiting (in memory, every counter seeded), else a promise of it. */
  reserve(counters: readonly CounterSpec[], estimate: Amounts, now: number): ReserveOutcome | Promise<ReserveOutcome>;
  /** The counters' states (seeded first if need be), for the usage API. */
  read(counters: readonly CounterSpec[], now: number): Promise<CounterState[]>;
}

/** What a counter of tokens or USD starts a window with: the consumption the usage records already hold (restarts, limits set mid-window). */
export type SeedCounter = (counter: CounterSpec) => Promise<number>;

/** Floating-point slack on USD sums (a millionth of a cent): ten reservations of x must fit a limit of 10x. */
export const EPSILON = 1e-9;

/**
 * The admission rule, for both ledgers (redis-ledger.ts states it again in
 * Lua): room must be left (a counter at or over its limit refuses even a
 * call estimated at 0, such as a model without a price), and the estimate
 * must fit.
 */
export function admits(limit: number, state: CounterState, amount: number): boolean {
  const taken = state.used + state.reserved;
  return taken < limit && taken + amount <= limit + EPSILON;
}

/** Only tokens and USD are seeded from the usage records; requests per minute start each minute at 0. */
export const isSeeded = (kind: LimitKind) => kind !== 'requests';

/** The counters a call is checked against: its key's limits first (a refusal names the narrower one), then its tenant's. */
export function countersFor(
  tenantId: string,
  keyId: string,
  keyLimits: Limits | undefined,
  tenantLimits: Limits | undefined,
  now: number,
): CounterSpec[] {
  const counters: CounterSpec[] = [];
  const add = (scope: LimitScope, limits: Limits | undefined) => {
    if (!limits) return;
    for (const kind of LIMIT_KINDS) {
      const limit = limits[LIMIT_FIELD[kind]];
      if (limit !== undefined) counters.push({ scope, kind, tenantId, keyId: scope === 'key' ? keyId : undefined, limit, window: windowOf(kind, now) });
    }
  };
  add('key', keyLimits);
  add('tenant', tenantLimits);
  return counters;
}

/** The stable name of a counter, shared by both ledgers' storage (the Redis hash tag keeps a tenant's counters in one cluster slot). */
export function counterName(counter: CounterSpec): string {
  if (counter.name !== undefined) return counter.name;
  const owner = counter.scope === 'key' ? `k:${counter.keyId}` : 't';
  counter.name = `{${counter.tenantId}}:${owner}:${counter.kind}`;
  return counter.name;
}
