import { Counter, Gauge, type Registry } from 'prom-client';
import { type CounterChild, SummedCounter, SummedHistogram } from '../platform/metrics.ts';
import { isCatalogId } from './catalog/catalog.ts';
import type { Call } from './pipeline/call.ts';
import type { CircuitBreakers, CircuitEvent, CircuitScope } from './routing/circuit-breaker.ts';

/**
 * The data plane's own metrics, beside the HTTP ones every service has.
 * Model labels are catalog models only (anything else counts as "other"):
 * a label made from what clients send would let them grow the registry
 * without bound.
 */
export interface GatewayMetrics {
  observeCall(call: Call): void;
  usageDropped: Counter;
  /** Usage records the database refused, set aside (usage-writer.ts). */
  usageRejected: Counter;
  /** A circuit changed state, or skipped a call (routing/circuit-breaker.ts). */
  circuitEvent(provider: string, event: CircuitEvent, scope: CircuitScope): void;
  /** The breakers whose open circuits `gateway_circuits_open` counts when scraped. */
  watchCircuits(breakers: Pick<CircuitBreakers, 'openCounts'>): void;
}

export function createGatewayMetrics(registry: Registry): GatewayMetrics {
  const registers = [registry];
  const calls = new SummedCounter({
    name: 'gateway_calls_total',
    help: 'Data-plane calls, by status, model (catalog models; others as "other"), provider and cache status.',
    labelNames: ['status', 'model', 'provider', 'cache'],
    registers,
  });
  const overhead = new SummedHistogram({
    name: 'gateway_overhead_seconds',
    help: "The gateway's own time per call until the answer started, upstream excluded.",
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers,
  });
  const upstream = new SummedHistogram({
    name: 'gateway_upstream_seconds',
    help: 'Time waiting on the provider per call, by provider.',
    labelNames: ['provider'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers,
  });
  const tokens = new SummedCounter({
    name: 'gateway_tokens_total',
    help: 'Tokens by kind (prompt, cached, cache_write, completion, reasoning, saved) and model.',
    labelNames: ['kind', 'model'],
    registers,
  });
  const cost = new SummedCounter({ name: 'gateway_cost_usd_total', help: 'Cost of calls in USD at catalog prices, by model.', labelNames: ['model'], registers });
  const usageDropped = new Counter({
    name: 'gateway_usage_records_dropped_total',
    help: 'Usage records dropped because the database stayed unreachable and the buffer was full.',
    registers,
  });
  const usageRejected = new Counter({
    name: 'gateway_usage_records_rejected_total',
    help: 'Usage records the database refused while the records beside them were written: set aside (usage-rejected.jsonl in the journal directory) instead of retried.',
    registers,
  });
  const usageFlagged = new Counter({
    name: 'gateway_usage_flagged_total',
    help: 'Calls whose token counts are not the provider\'s own, by provider and flag: clamped (a reported count out of bounds) or estimated (a stream cut short before its usage).',
    labelNames: ['provider', 'flag'],
    registers,
  });
  const circuitEvents = new Counter({
    name: 'gateway_circuit_events_total',
    help: "Circuit breakers (per replica): circuits opened, half-opened, reopened (a failed probe) and closed, and calls skipped while open, by provider and scope (tenant: a tenant's own circuit; shared: a provider origin's).",
    labelNames: ['provider', 'event', 'scope'],
    registers,
  });
  // Counted when scraped, from the breakers' entries: a tenant's circuit that nobody calls again never sends `closed`.
  let watched: Pick<CircuitBreakers, 'openCounts'> | undefined;
  new Gauge({
    name: 'gateway_circuits_open',
    help: "Circuits skipping calls on this replica (open, or half-open with a probe out), by provider and scope (tenant: a tenant's own circuits; shared: provider origins').",
    labelNames: ['provider', 'scope'],
    registers,
    collect() {
      this.reset();
      if (watched === undefined) return;
      for (const { provider, scope, count } of watched.openCounts().values()) this.set({ provider, scope }, count);
    },
  });
  // The counters and histograms count per label set in place (SummedCounter, SummedHistogram). Children are looked up
  // on each call, never held: registry.resetMetrics() drops them, and a held one would count where nothing reads.
  const perModel = new Map<string, ModelCounters>();
  const countersOf = (model: string): ModelCounters => {
    let found = perModel.get(model);
    if (found === undefined) {
      const kind = (k: string) => tokens.child(`${k}|${model}`, () => ({ kind: k, model }));
      found = {
        prompt: kind('prompt'),
        cached: kind('cached'),
        cacheWrite: kind('cache_write'),
        completion: kind('completion'),
        reasoning: kind('reasoning'),
        saved: kind('saved'),
        cost: cost.child(model, () => ({ model })),
      };
      perModel.set(model, found);
    }
    return found;
  };
  return {
    usageDropped,
    usageRejected,
    circuitEvent(provider, event, scope) {
      circuitEvents.inc({ provider, event, scope });
    },
    watchCircuits(breakers) {
      watched = breakers;
    },
    observeCall(call) {
      const target = call.target;
      const model = target && isCatalogId(target) ? target.ref : target ? 'other' : 'none';
      const provider = target?.provider.id ?? 'none';
      calls.child(`${call.status}|${call.cacheStatus}|${provider}|${model}`, () => ({ status: call.status, model, provider, cache: call.cacheStatus })).inc();
      if (call.overheadMs !== undefined) overhead.child('', () => ({})).observe(call.overheadMs / 1000);
      if (target && call.upstreamMs > 0) upstream.child(provider, () => ({ provider })).observe(call.upstreamMs / 1000);
      const counters = countersOf(model);
      const usage = call.usage;
      if (usage) {
        if (usage.clamped) usageFlagged.inc({ provider, flag: 'clamped' });
        if (usage.estimated) usageFlagged.inc({ provider, flag: 'estimated' });
        counters.prompt.inc(usage.promptTokens);
        counters.cached.inc(usage.cachedTokens);
        counters.cacheWrite.inc(usage.cacheWriteTokens);
        counters.completion.inc(usage.completionTokens);
        counters.reasoning.inc(usage.reasoningTokens);
      }
      counters.saved.inc(call.tokensSaved);
      if (call.costUsd) counters.cost.inc(call.costUsd);
    },
  };
}

/** One model's token and cost counters. */
interface ModelCounters {
  prompt: CounterChild;
  cached: CounterChild;
  cacheWrite: CounterChild;
  completion: CounterChild;
  reasoning: CounterChild;
  saved: CounterChild;
  cost: CounterChild;
}
