import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Clock } from '../../platform/clock.ts';
import type { BudgetLedger } from '../budgets/ledger.ts';
import type { ResponseCache } from '../cache/response-cache.ts';
import type { GatewayConfig } from '../config.ts';
import type { UsageWriter } from '../usage/usage-writer.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { ProviderAdapter } from '../providers/types.ts';
import { CircuitBreakers } from '../routing/circuit-breaker.ts';
import { stickyRoutes } from '../routing/sticky-routes.ts';
import { embeddingsPipeline } from '../surfaces/embeddings/pipeline.ts';
import { type Call, compose } from './call.ts';
import { budgetStages } from './stages/budgets.ts';
import { cacheStage } from './stages/cache.ts';
import { compactionStage } from './stages/compaction.ts';
import type { TenantConcurrency } from './stages/concurrency.ts';
import { dedupStage } from './stages/dedup.ts';
import { promptCacheStage } from './stages/prompt-cache.ts';
import { routingStages } from './stages/routing.ts';
import { savingsStage } from './stages/savings.ts';
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
  /** Each tenant's calls in progress on this replica, capped. */
  concurrency: TenantConcurrency;
}

/**
 * The data plane, in order. Each stage wraps the ones after it. The
 * cheapest refusals come first, before any stage whose work grows with the
 * request (compaction, routing's classifier and token counts):
 * 1. usage: records every call, failed ones included, and its metrics;
 * 1a. concurrency: the tenant's calls in progress on this replica capped
 *    (GATEWAY_TENANT_CONCURRENCY), counted until each has finished;
 * 2. model check: a model the tenant cannot call refused (no key for its
 *    provider, unknown, `auto` with nothing to route to);
 * 3. requests per minute: the key's and tenant's rate checked and counted;
 * 4. compaction: the prompt made smaller (X-Gateway-Compact), before anything keys on it;
 * 5. routing: the model named (or chosen, for `auto`), resolved to a provider,
 *    key and base URL, with the fallbacks that fit the request;
 * 6. spending: tokens per day and USD per month checked and the estimated
 *    cost reserved (settled after);
 * 7. cache: an identical earlier answer replayed;
 * 8. dedup: an identical call in flight joined;
 * 9. prompt caching: the provider's prompt-cache hints placed;
 * 9a. savings: once answered, what compaction, the gateway's breakpoints and
 *    routing saved against the client's own request sent directly, and what
 *    the provider's own caching saved, apart;
 * 10. upstream: the provider call through its adapter, streamed or not,
 *    with retries and fallbacks along the targets.
 * Embeddings calls pass the stages of these that apply to them, the same
 * ones (one usage writer, ledger, set of circuits), with a model stage and
 * a cache of their own (surfaces/embeddings/pipeline.ts).
 */
export function buildPipeline(deps: PipelineDeps): { chat: (call: Call) => Promise<void>; embeddings: (call: Call) => Promise<void> } {
  const { routing } = deps.config;
  const breakers = new CircuitBreakers({
    failures: routing.breakerFailures,
    cooldownMs: routing.breakerCooldownMs,
    sharedTenants: routing.breakerSharedTenants,
    sharedWindowMs: routing.breakerSharedWindowMs,
    clock: deps.clock,
    onEvent: deps.metrics.circuitEvent,
  });
  deps.metrics.watchCircuits(breakers);
  const route = routingStages({ adapters: deps.adapters, config: routing, sticky: stickyRoutes(deps.redis, deps.clock, { sessions: routing.stickySessions, perTenant: routing.stickySessionsPerTenant }), log: deps.log });
  const budgets = budgetStages({ ledger: deps.budgets, clock: deps.clock, defaultOutputTokens: deps.config.budgets.defaultOutputTokens, registry: deps.registry });
  const usage = usageStage(deps.usage, deps.metrics);
  const concurrency = deps.concurrency.stage();
  const upstream = upstreamStage(deps.upstream, { config: routing, breakers, clock: deps.clock });
  const chat = compose([
    usage,
    concurrency,
    route.check,
    budgets.requests,
    compactionStage(deps.config.compactDefault),
    route.route,
    budgets.spending,
    cacheStage(deps.cache),
    dedupStage(deps.cache),
    promptCacheStage(),
    savingsStage(),
    upstream,
  ]);
  const embeddings = embeddingsPipeline(
    { usage, concurrency, requests: budgets.requests, spending: budgets.spending, upstream },
    { adapters: deps.adapters, cache: deps.cache, clock: deps.clock },
  );
  return { chat, embeddings };
}
