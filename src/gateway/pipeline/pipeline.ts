import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Clock } from '../../platform/clock.ts';
import type { BudgetLedger } from '../budgets/ledger.ts';
import type { ResponseCache } from '../cache/response-cache.ts';
import type { GatewayConfig } from '../config.ts';
import type { UsageWriter } from '../data-plane/usage-writer.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { ProviderAdapter } from '../providers/types.ts';
import { CircuitBreakers } from '../routing/circuit-breaker.ts';
import { stickyRoutes } from '../routing/sticky-routes.ts';
import { type Call, compose } from './call.ts';
import { budgetStage } from './stages/budgets.ts';
import { cacheStage } from './stages/cache.ts';
import { compactionStage } from './stages/compaction.ts';
import { dedupStage } from './stages/dedup.ts';
import { promptCacheStage } from './stages/prompt-cache.ts';
import { routingStage } from './stages/routing.ts';
import { type UpstreamSettings, upstreamStage } from './stages/upstream.ts';
import { usageStage } from './stages/usage.ts';

export interface PipelineDeps {
  usage: UsageWriter;
  metrics: GatewayMetrics;
  /** By provider id. */
  adapters: ReadonlyMap<string, ProviderAdapter>;
  upstream: UpstreamSettings;
  config: GatewayConfig;
  clock: Clock;
  log: Logger;
  /** The service's metrics registry, for stages that keep their own metrics. */
  registry: Registry;
  /** Set when REDIS_URL is: what replicas share (cache, dedup, budgets, sticky routes, breakers). */
  redis: Redis | undefined;
  /** Where budgets reserve and settle (shared with the control plane's GET /api/v1/tenant/limits). */
  budgets: BudgetLedger;
  /** The response cache and in-flight dedup (their stages share it). */
  cache: ResponseCache;
}

/**
 * The data plane, in order. Each stage wraps the ones after it:
 * 1. usage: records every call, failed ones included, and its metrics;
 * 2. compaction: the prompt made smaller (X-Gateway-Compact), before anything keys on it;
 * 3. routing: the model named (or chosen, for `auto`), resolved to a provider,
 *    key and base URL, with the fallbacks that fit the request;
 * 4. budgets: limits checked and the estimated cost reserved (settled after);
 * 5. cache: an identical earlier answer replayed;
 * 6. dedup: an identical call in flight joined;
 * 7. prompt caching: the provider's prompt-cache hints placed;
 * 8. upstream: the provider call through its adapter, streamed or not,
 *    with retries and fallbacks along the targets.
 */
export function buildPipeline(deps: PipelineDeps): (call: Call) => Promise<void> {
  const { routing } = deps.config;
  const breakers = new CircuitBreakers({
    failures: routing.breakerFailures,
    cooldownMs: routing.breakerCooldownMs,
    clock: deps.clock,
    onEvent: deps.metrics.circuitEvent,
  });
  return compose([
    usageStage(deps.usage, deps.metrics),
    compactionStage(deps.config.compactDefault),
    routingStage({ adapters: deps.adapters, config: routing, sticky: stickyRoutes(deps.redis, deps.clock), log: deps.log }),
    budgetStage({ ledger: deps.budgets, clock: deps.clock, defaultOutputTokens: deps.config.budgets.defaultOutputTokens, registry: deps.registry }),
    cacheStage(deps.cache),
    dedupStage(deps.cache),
    promptCacheStage(),
    upstreamStage(deps.upstream, { config: routing, breakers, clock: deps.clock }),
  ]);
}
