import { Type } from 'typebox';
import { isReady } from '../../platform/db.ts';
import type { App } from '../../platform/http.ts';
import type { Metrics } from '../../platform/metrics.ts';
import { authMigrations } from '../migrations.ts';
import type { AuthDb } from '../schema.ts';

/** Liveness, readiness and metrics: the only routes served without X-Api-Key. */
export async function healthRoutes(app: App, opts: { db: AuthDb; metrics: Metrics }): Promise<void> {
  const Ok = Type.Object({ ok: Type.Boolean() });
  app.get('/healthz', { schema: { hide: true, response: { 200: Ok } } }, async () => ({ ok: true }));
  app.get('/readyz', { schema: { hide: true, response: { 200: Ok, 503: Ok } } }, async (_req, reply) => {
    const ready = await isReady(opts.db, authMigrations);
    return reply.status(ready ? 200 : 503).send({ ok: ready });
  });
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    return reply.type(opts.metrics.registry.contentType).send(await opts.metrics.registry.metrics());
  });
}
