import { healthRoutes as platformHealthRoutes } from '../../platform/health.ts';
import type { App } from '../../platform/http.ts';
import type { Metrics } from '../../platform/metrics.ts';
import { authMigrations } from '../migrations.ts';
import type { AuthDb } from '../schema.ts';

/** Liveness, readiness and metrics: the only routes served without X-Api-Key. */
export async function healthRoutes(app: App, opts: { db: AuthDb; metrics: Metrics }): Promise<void> {
  await platformHealthRoutes(app, { db: opts.db, migrations: authMigrations, metrics: opts.metrics });
}
