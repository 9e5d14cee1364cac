import { acceptFormBodies } from '../platform/form.ts';
import { createHttpApp, requireApiKey, type App, useErrorFormat } from '../platform/http.ts';
import { healthRoutes } from '../platform/health.ts';
import { createRateLimiter } from '../platform/limits.ts';
import type { AuthDeps } from './deps.ts';
import { authMigrations } from './migrations.ts';
import { ClientMetadataResolver } from './oauth/client-metadata.ts';
import type { OAuthDeps } from './oauth/clients.ts';
import { oauthErrorProblem } from './oauth/errors.ts';
import { accountRoutes } from './routes/account.ts';
import { accountPageRoutes } from './routes/account-page.ts';
import { grantRoutes } from './routes/grants.ts';
import { oauthEndpoints } from './routes/oauth-endpoints.ts';
import { oauthPages } from './routes/oauth-pages.ts';
import { passwordRoutes } from './routes/password.ts';
import { resetPageRoutes } from './routes/reset-page.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { signUpPageRoutes } from './routes/signup-page.ts';
import { tokenRoutes } from './routes/tokens.ts';
import { verifyPageRoutes } from './routes/verify-page.ts';

/**
 * The account service's HTTP app. Health and readiness are open, metrics
 * as AUTH_METRICS_PORT and AUTH_METRICS_TOKEN say; the verification and
 * password reset pages are open when the service serves them itself; the
 * OAuth paths are open only with OAUTH_PUBLIC_ENDPOINTS=true; every other
 * route lives in a scope guarded by X-Api-Key.
 */
export async function buildAuthApp(deps: AuthDeps): Promise<App> {
  const app = await createHttpApp({
    logger: deps.log,
    metrics: deps.metrics,
    bodyLimit: deps.config.bodyLimit,
    trustProxy: deps.config.trustProxy,
    title: 'Account service',
    version: '0.1.0',
    // DELETE /v1/grants/{client_id}: a metadata-URL client's id is a URL (the route bounds it to 2048 characters).
    maxParamLength: 4096,
  });
  await app.register(healthRoutes, { db: deps.db, migrations: authMigrations, metrics: deps.metrics, metricsExposure: deps.config.metricsExposure });
  if (!deps.config.verifyUrl) await app.register(verifyPageRoutes, deps);
  if (!deps.config.resetUrl) await app.register(resetPageRoutes, deps);
  const oauth = oauthDeps(deps);
  if (oauth?.oauth.publicEndpoints) await app.register(oauthScope, { deps: oauth, cors: true });
  await app.register(async (scope) => {
    scope.addHook('onRequest', requireApiKey([deps.config.apiKey, ...deps.config.previousApiKeys]));
    await scope.register(accountRoutes, deps);
    await scope.register(passwordRoutes, deps);
    await scope.register(tokenRoutes, deps);
    await scope.register(sessionRoutes, deps);
    await scope.register(grantRoutes, deps);
    if (oauth && !oauth.oauth.publicEndpoints) await scope.register(oauthScope, { deps: oauth, cors: false });
    scope.get('/openapi.json', { schema: { hide: true } }, async () => scope.swagger());
  });
  return app;
}

function oauthDeps(deps: AuthDeps): OAuthDeps | undefined {
  const config = deps.config.oauth;
  if (!config) return undefined;
  return {
    ...deps,
    oauth: config,
    issuer: deps.config.baseUrl,
    metadata: new ClientMetadataResolver({
      clock: deps.clock,
      allowInsecure: config.allowInsecureMetadata,
      log: deps.log,
      limiter: createRateLimiter('oauth:metadata-fetch', config.limits.metadataFetch, deps.redis),
    }),
    registrationLimiter: createRateLimiter('oauth:register', config.limits.registration, deps.redis),
    authorizeLimiter: createRateLimiter('oauth:authorize', config.limits.authorize, deps.redis),
  };
}

/** The OAuth paths, with RFC 6749 error bodies instead of problem+json. */
async function oauthScope(app: App, opts: { deps: OAuthDeps; cors: boolean }): Promise<void> {
  acceptFormBodies(app);
  useErrorFormat(app, 'oauth', { mapError: oauthErrorProblem });
  await app.register(oauthEndpoints, { deps: opts.deps, cors: opts.cors, apiKeys: [opts.deps.config.apiKey, ...opts.deps.config.previousApiKeys] });
  await app.register(oauthPages, opts.deps);
  // The account and sign-up pages go through the public sign-in page, so they exist only where that page is public.
  if (opts.deps.oauth.publicEndpoints) {
    await app.register(accountPageRoutes, opts.deps);
    await app.register(signUpPageRoutes, opts.deps);
  }
}
