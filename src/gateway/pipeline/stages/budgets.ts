import { Counter, type Registry } from 'prom-client';
import type { Clock } from '../../../platform/clock.ts';
import { actualSpend, estimateCall } from '../../budgets/estimate.ts';
import { type BudgetLedger, type CounterSpec, countersFor } from '../../budgets/ledger.ts';
import { limitExceeded, rateLimitHeaders } from '../../budgets/limit-replies.ts';
import { activeLimits, LIMIT_FIELD, type Limits } from '../../settings/limits.ts';
import type { Call, Stage } from '../call.ts';

export interface BudgetStageSettings {
  ledger: BudgetLedger;
  clock: Clock;
  /** Output tokens reserved for a call that names no max_tokens (GATEWAY_BUDGET_DEFAULT_OUTPUT_TOKENS). */
  defaultOutputTokens: number;
  registry: Registry;
}

/**
 * Budgets and limits (docs/gateway-budgets.md), as two stages around the
 * work a call costs the gateway:
 * - `requests` (requests per minute), before compaction and routing: a
 *   call over its rate costs no more than this check, and it counts
 *   (whatever happens to it after) from here;
 * - `spending` (tokens per day, USD per month), after routing (the target
 *   and its prices are known, the prompt is compacted) and around the
 *   cache, dedup and the upstream call.
 * Each does the same with its counters (the key's and the tenant's):
 * 1. neither the key nor its tenant has such a limit: nothing else happens;
 * 2. the call's estimated cost is checked against every counter and
 *    reserved in all of them at once, or the call is refused with 429;
 * 3. the x-ratelimit-* headers go on the answer;
 * 4. whatever happens next (an answer, a cache hit, an error, the client
 *    leaving), the reservation is settled with what the call really spent.
 */
export function budgetStages(settings: BudgetStageSettings): { requests: Stage; spending: Stage } {
  const refusals = new Counter({
    name: 'gateway_budget_refusals_total',
    help: 'Calls refused by a limit, by whose limit (key or tenant) and which.',
    labelNames: ['scope', 'limit'],
    registers: [settings.registry],
  });
  /**
   * A key's counters, reused while its principal and tenant context are the
   * same objects (each is replaced when its limits change) and every window
   * holds: made afresh for every call, they and their names were about 1 %
   * of the event loop's time under benchmark 5's load.
   */
  const kept = new WeakMap<Call['principal'], CounterSets>();
  const countersOf = (call: Call, keyLimits: Limits | undefined, tenantLimits: Limits | undefined, now: number): CounterSets => {
    const memo = kept.get(call.principal);
    if (memo !== undefined && memo.tenant === call.tenant && now >= memo.from && now < memo.until) return memo;
    const counters = countersFor(call.principal.tenantId, call.principal.keyId, keyLimits, tenantLimits, now);
    let from = Number.NEGATIVE_INFINITY;
    let until = Number.POSITIVE_INFINITY;
    for (const c of counters) {
      from = Math.max(from, c.window.start);
      until = Math.min(until, c.window.end);
    }
    const sets = {
      tenant: call.tenant,
      requests: counters.filter((c) => c.kind === 'requests'),
      spending: counters.filter((c) => c.kind !== 'requests'),
      from,
      until,
    };
    kept.set(call.principal, sets);
    return sets;
  };
  const stage = (which: 'requests' | 'spending'): Stage =>
    function enforceBudgets(call, next) {
      const keyLimits = call.principal.limits;
      const tenantLimits = activeLimits(call.tenant.settings.limits);
      if (keyLimits === undefined && tenantLimits === undefined) return next();
      const now = settings.clock.now();
      const counters = countersOf(call, keyLimits, tenantLimits, now)[which];
      if (counters.length === 0) return next();
      return reserveAround(call, next, counters, now);
    };
  return { requests: stage('requests'), spending: stage('spending') };

  async function reserveAround(call: Call, next: () => Promise<void>, counters: CounterSpec[], now: number) {
    const estimate = estimateCall(call, settings.defaultOutputTokens, counters[0]!.kind !== 'requests');
    const reserved = settings.ledger.reserve(counters, estimate, now);
    const outcome = reserved instanceof Promise ? await reserved : reserved;
    if (!outcome.ok) {
      refusals.inc({ scope: outcome.counter.scope, limit: LIMIT_FIELD[outcome.counter.kind] });
      throw limitExceeded(outcome.counter, outcome.state, estimate[outcome.counter.kind], now);
    }
    // Sent with the gateway's headers: on the reply, a stream's head or an error alike.
    rateLimitHeaders(counters, outcome.states, now, call.replyHeaders);
    try {
      await next();
    } finally {
      // Not awaited: the answer does not wait on the ledger (a settle never throws).
      void outcome.reservation.settle(actualSpend(call));
    }
  }
}

/** A key's counters, by the stage that reserves in them, and the time they hold for. */
interface CounterSets {
  tenant: Call['tenant'];
  requests: CounterSpec[];
  spending: CounterSpec[];
  from: number;
  until: number;
}
