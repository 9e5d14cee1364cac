import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { buildConnector } from 'undici';
import type { Clock } from '../../platform/clock.ts';
import { createBudgetLedger } from '../budgets/create-ledger.ts';
import type { BudgetLedger } from '../budgets/ledger.ts';
import { MemoryAnswerStore } from '../cache/memory-store.ts';
import { ResponseCache } from '../cache/response-cache.ts';
import type { GatewayConfig } from '../config.ts';
import { type InvalidationBus, invalidationBus } from '../invalidation.ts';
import { createGatewayMetrics } from '../metrics.ts';
import { buildPipeline } from '../pipeline/pipeline.ts';
import { buildAdapters } from '../providers/adapters.ts';
import { PROVIDERS } from '../providers/registry.ts';
import type { DataPlaneRouteDeps } from '../surfaces/routes.ts';
import type { GatewayDb } from '../schema.ts';
import { countTokensVia } from '../surfaces/messages/count-tokens.ts';
import { ResponseStore } from '../surfaces/responses/store.ts';
import { apiKeyStore } from './api-key-auth.ts';
import { tenantContexts } from './tenant-context.ts';
import { TenantConcurrency } from '../pipeline/stages/concurrency.ts';
import { UpstreamPools } from './upstream-pools.ts';
import { UpstreamShares } from './upstream-shares.ts';
import { UsageJournal } from '../usage/usage-journal.ts';
import { UsageWriter } from '../usage/usage-writer.ts';

export interface DataPlane {
  routes: DataPlaneRouteDeps;
  bus: InvalidationBus;
  usage: UsageWriter;
  /** The budgets' ledger (the control plane reads consumption from it). */
  budgets: BudgetLedger;
  /** The upstream pools (SSRF-safe connector): the console's provider-key test calls through them too. */
  pools: UpstreamPools;
  /** Each tenant's calls in flight per origin, within GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT. */
  shares: UpstreamShares;
  /** Each tenant's calls in progress, within GATEWAY_TENANT_CONCURRENCY. */
  concurrency: TenantConcurrency;
  /** The in-process answer store (without REDIS_URL), each tenant within GATEWAY_CACHE_TENANT_SHARE_PERCENT of it. */
  cacheStore: MemoryAnswerStore | undefined;
  /** After the HTTP server has drained: writes the queued usage records, closes pools and the bus. */
  close(): Promise<void>;
}

/** Wires the data plane's parts: caches, invalidation, pools, the usage writer and the pipeline. */
export function createDataPlane(options: {
  db: GatewayDb;
  clock: Clock;
  config: GatewayConfig;
  log: Logger;
  registry: Registry;
  redis: Redis | undefined;
  connector: (origin: URL, connectTimeoutMs: number) => buildConnector.connector;
}): DataPlane {
  const { db, clock, config, log } = options;
  const bus = invalidationBus(options.redis, log);
  const metrics = createGatewayMetrics(options.registry);
  const journal = config.usage.journalDir ? new UsageJournal({ dir: config.usage.journalDir, log }) : undefined;
  const usage = new UsageWriter({
    db,
    log,
    flushMs: config.usage.flushMs,
    batchSize: config.usage.batchSize,
    onDropped: (count) => metrics.usageDropped.inc(count),
    onRejected: (count) => metrics.usageRejected.inc(count),
    journal,
  });
  if (journal) {
    const recovered = usage.recover(journal.orphans());
    if (recovered > 0) log.warn({ records: recovered }, 'usage journal: writing the records a gateway stopped without writing');
  }
  const pools = new UpstreamPools({
    connectTimeoutMs: config.upstream.connectTimeoutMs,
    connections: config.upstream.connections,
    connector: options.connector,
  });
  const shares = new UpstreamShares(config.upstream.connectionsPerTenant);
  const concurrency = new TenantConcurrency(config.tenantConcurrency);
  const budgets = createBudgetLedger({ db, redis: options.redis, clock, log, reservationTtlMs: config.budgets.reservationTtlMs });
  const cache = new ResponseCache({ config, clock, log, redis: options.redis });
  const pipelines = buildPipeline({
    usage,
    metrics,
    adapters: buildAdapters(PROVIDERS, { anthropicDefaultMaxTokens: config.anthropicDefaultMaxTokens }),
    concurrency,
    upstream: {
      pools,
      shares,
      firstByteTimeoutMs: config.upstream.firstByteTimeoutMs,
      idleTimeoutMs: config.upstream.idleTimeoutMs,
      maxResponseBytes: config.upstream.maxResponseBytes,
    },
    config,
    clock,
    log,
    registry: options.registry,
    redis: options.redis,
    budgets,
    cache,
  });
  const routes: DataPlaneRouteDeps = {
    apiKeys: apiKeyStore({ db, clock, bus }),
    tenants: tenantContexts({
      db,
      clock,
      bus,
      encryptionKeys: [config.encryptionKey, ...config.previousEncryptionKeys],
      storedBodies: { ...config.storedBodies, retentionMs: config.usage.retentionMs },
      onUnreadableKey: (tenantId, provider) =>
        log.error({ tenantId, provider }, 'a stored provider key opens with neither GATEWAY_ENCRYPTION_KEY nor GATEWAY_ENCRYPTION_KEY_PREVIOUS; it is ignored'),
    }),
    // Each response stored takes its bytes from the tenant's quota on this replica (its next load counts them from the database).
    responses: new ResponseStore({ db, clock, encryptionKeys: [config.encryptionKey, ...config.previousEncryptionKeys], onStored: (tenantId, bytes) => routes.tenants.peek(tenantId)?.storage.use(bytes) }),
    clock,
    bodyLimit: config.bodyLimit,
    countTokens: countTokensVia({ pools, firstByteTimeoutMs: config.upstream.firstByteTimeoutMs, idleTimeoutMs: config.upstream.idleTimeoutMs }),
    run: pipelines.chat,
    runEmbeddings: pipelines.embeddings,
    durable: () => usage.durable(),
  };
  return {
    routes,
    bus,
    usage,
    budgets,
    pools,
    shares,
    concurrency,
    cacheStore: cache.store instanceof MemoryAnswerStore ? cache.store : undefined,
    async close() {
      await usage.close();
      await pools.close();
      await bus.close();
      cache.close();
    },
  };
}
