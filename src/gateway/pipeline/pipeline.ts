import type { UsageWriter } from '../data-plane/usage-writer.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { ProviderAdapter } from '../providers/types.ts';
import { type Call, compose } from './call.ts';
import { resolveModelStage } from './stages/resolve-model.ts';
import { type UpstreamSettings, upstreamStage } from './stages/upstream.ts';
import { usageStage } from './stages/usage.ts';

export interface PipelineDeps {
  usage: UsageWriter;
  metrics: GatewayMetrics;
  /** By provider id. */
  adapters: ReadonlyMap<string, ProviderAdapter>;
  upstream: UpstreamSettings;
}

/**
 * The data plane, in order. Each stage wraps the ones after it:
 * 1. usage: records every call, failed ones included, and its metrics;
 * 2. routing: the model named, resolved to a provider, key and base URL;
 * 3. upstream: the provider call through its adapter, streamed or not.
 * Budgets, compaction, the response cache, in-flight dedup and provider
 * prompt caching take their places between 1 and 3 (next issue).
 */
export function buildPipeline(deps: PipelineDeps): (call: Call) => Promise<void> {
  return compose([usageStage(deps.usage, deps.metrics), resolveModelStage(deps.adapters), upstreamStage(deps.upstream)]);
}
