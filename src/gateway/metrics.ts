import { Counter, Histogram, type Registry } from 'prom-client';
import type { Call } from './pipeline/call.ts';

/**
 * The data plane's own metrics, beside the HTTP ones every service has.
 * Model labels are catalog models only (anything else counts as "other"):
 * a label made from what clients send would let them grow the registry
 * without bound.
 */
export interface GatewayMetrics {
  observeCall(call: Call): void;
  usageDropped: Counter;
}

export function createGatewayMetrics(registry: Registry): GatewayMetrics {
  const registers = [registry];
  const calls = new Counter({
    name: 'gateway_calls_total',
    help: 'Data-plane calls, by status, model (catalog models; others as "other"), provider and cache status.',
    labelNames: ['status', 'model', 'provider', 'cache'],
    registers,
  });
  const overhead = new Histogram({
    name: 'gateway_overhead_seconds',
    help: "The gateway's own time per call until the answer started, upstream excluded.",
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
    registers,
  });
  const upstream = new Histogram({
    name: 'gateway_upstream_seconds',
    help: 'Time waiting on the provider per call, by provider.',
    labelNames: ['provider'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers,
  });
  const tokens = new Counter({
    name: 'gateway_tokens_total',
    help: 'Tokens by kind (prompt, cached, cache_write, completion, reasoning, saved) and model.',
    labelNames: ['kind', 'model'],
    registers,
  });
  const cost = new Counter({ name: 'gateway_cost_usd_total', help: 'Cost of calls in USD at catalog prices, by model.', labelNames: ['model'], registers });
  const usageDropped = new Counter({
    name: 'gateway_usage_records_dropped_total',
    help: 'Usage records dropped because the database stayed unreachable and the buffer was full.',
    registers,
  });
  return {
    usageDropped,
    observeCall(call) {
      const target = call.target;
      const model = target?.entry ? `${target.provider.id}/${target.entry.id}` : target ? 'other' : 'none';
      const provider = target?.provider.id ?? 'none';
      calls.inc({ status: call.status, model, provider, cache: call.cacheStatus });
      if (call.overheadMs !== undefined) overhead.observe(call.overheadMs / 1000);
      if (target && call.upstreamMs > 0) upstream.observe({ provider }, call.upstreamMs / 1000);
      const usage = call.usage;
      if (usage) {
        if (usage.promptTokens) tokens.inc({ kind: 'prompt', model }, usage.promptTokens);
        if (usage.cachedTokens) tokens.inc({ kind: 'cached', model }, usage.cachedTokens);
        if (usage.cacheWriteTokens) tokens.inc({ kind: 'cache_write', model }, usage.cacheWriteTokens);
        if (usage.completionTokens) tokens.inc({ kind: 'completion', model }, usage.completionTokens);
        if (usage.reasoningTokens) tokens.inc({ kind: 'reasoning', model }, usage.reasoningTokens);
      }
      if (call.tokensSaved) tokens.inc({ kind: 'saved', model }, call.tokensSaved);
      if (call.costUsd) cost.inc({ model }, call.costUsd);
    },
  };
}
