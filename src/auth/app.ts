import { createHttpApp, requireApiKey, type App } from '../platform/http.ts';
import type { AuthDeps } from './deps.ts';
import { accountRoutes } from './routes/account.ts';
import { healthRoutes } from './routes/health.ts';
import { verifyPageRoutes } from './routes/verify-page.ts';

/**
 * The account service's HTTP app. Health, readiness and metrics are open;
 * the verification page is open when the service serves it itself; every
 * other route lives in a scope guarded by X-Api-Key.
 */
export async function buildAuthApp(deps: AuthDeps): Promise<App> {
  const app = await createHttpApp({
    logger: deps.log,
    metrics: deps.metrics,
    bodyLimit: deps.config.bodyLimit,
    trustProxy: deps.config.trustProxy,
    title: 'Account service',
    version: '0.1.0',
  });
  await app.register(healthRoutes, { db: deps.db, metrics: deps.metrics });
  if (!deps.config.verifyUrl) await app.register(verifyPageRoutes, deps);
  await app.register(async (scope) => {
    scope.addHook('onRequest', requireApiKey(deps.config.apiKey));
    await scope.register(accountRoutes, deps);
    scope.get('/openapi.json', { schema: { hide: true } }, async () => scope.swagger());
  });
  return app;
}
