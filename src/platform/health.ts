import type { Migration } from 'kysely';
import { Type } from 'typebox';
import { type AnyDb, isReady } from './db.ts';
import type { App } from './http.ts';
import type { Metrics } from './metrics.ts';
import { type MetricsExposure, metricsRoute } from './metrics-endpoint.ts';

export interface HealthOptions {
  db: AnyDb;
  migrations: Record<string, Migration>;
  metrics: Metrics;
  /** Whether this port serves /metrics, and behind which token (the service's settings). */
  metricsExposure: MetricsExposure;
  /** True once shutdown has begun: readiness fails so a load balancer stops sending new requests. */
  draining?: () => boolean;
}

/**
 * Liveness and readiness (database answering, every migration applied, not
 * draining), with no authentication; Prometheus metrics where and as the
 * service's settings say (metrics-endpoint.ts).
 */
export async function healthRoutes(app: App, opts: HealthOptions): Promise<void> {
  const Ok = Type.Object({ ok: Type.Boolean() });
  app.get('/healthz', { schema: { hide: true, response: { 200: Ok } } }, async () => ({ ok: true }));
  app.get('/readyz', { schema: { hide: true, response: { 200: Ok, 503: Ok } } }, async (_req, reply) => {
    const ready = !opts.draining?.() && (await isReady(opts.db, opts.migrations));
    return reply.status(ready ? 200 : 503).send({ ok: ready });
  });
  if (opts.metricsExposure.onServicePort) metricsRoute(app, opts.metrics, opts.metricsExposure.token);
}
