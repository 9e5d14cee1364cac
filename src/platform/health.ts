import type { Migration } from 'kysely';
import { Type } from 'typebox';
import { type AnyDb, isReady } from './db.ts';
import type { App } from './http.ts';
import type { Metrics } from './metrics.ts';

export interface HealthOptions {
  db: AnyDb;
  migrations: Record<string, Migration>;
  metrics: Metrics;
  /** True once shutdown has begun: readiness fails so a load balancer stops sending new requests. */
  draining?: () => boolean;
}

/** Liveness, readiness (database answering, every migration applied, not draining) and Prometheus metrics; no authentication. */
export async function healthRoutes(app: App, opts: HealthOptions): Promise<void> {
  const Ok = Type.Object({ ok: Type.Boolean() });
  app.get('/healthz', { schema: { hide: true, response: { 200: Ok } } }, async () => ({ ok: true }));
  app.get('/readyz', { schema: { hide: true, response: { 200: Ok, 503: Ok } } }, async (_req, reply) => {
    const ready = !opts.draining?.() && (await isReady(opts.db, opts.migrations));
    return reply.status(ready ? 200 : 503).send({ ok: ready });
  });
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    return reply.type(opts.metrics.registry.contentType).send(await opts.metrics.registry.metrics());
  });
}
