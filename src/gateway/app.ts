import type { FastifyError, FastifyRequest } from 'fastify';
import { healthRoutes } from '../platform/health.ts';
import { errorHandler, notFoundHandler } from '../platform/error-format.ts';
import { bearerToken, createHttpApp, type App, useErrorFormat } from '../platform/http.ts';
import { rejectNulCharacters } from '../platform/nul-guard.ts';
import { type ConsoleOptions, registerConsole } from './console/console.ts';
import { accountSignIn } from './console/pages/account-sign-in.ts';
import type { GatewayDeps } from './deps.ts';
import { gatewayMigrations } from './migrations.ts';
import { type DataPlaneRouteDeps, dataPlaneRoutes } from './surfaces/routes.ts';
import { tenantForSession } from './control-plane/gateway-sessions.ts';
import { controlAuthRoutes } from './control-plane/routes/auth.ts';
import { controlKeyRoutes } from './control-plane/routes/keys.ts';
import { controlLimitRoutes } from './control-plane/routes/limits.ts';
import { controlUsageRoutes } from './control-plane/routes/usage.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant of the session that authenticated a /api/v1/tenant request. */
    tenantId: string;
  }
}

/**
 * The gateway's control plane as a plugin the service mounts: sign-up,
 * magic-link sign-in and logout; the tenant's routes under /api/v1/tenant in
 * a scope that admits only a live session (`Authorization: Bearer gws_…`);
 * and the web console at `/` (console/console.ts), whose sign-in pages
 * include, unless GATEWAY_MAGIC_LINK_URL points elsewhere, the page the
 * sign-in emails' links open.
 * Errors are problem+json (RFC 9457) with a stable code, whatever the
 * format of the app it is mounted in; bodies are bounded by the control
 * plane's own limit, not the data plane's.
 */
export async function registerControlPlane(app: App, deps: GatewayDeps, consoleOptions: ConsoleOptions = {}): Promise<void> {
  await app.register(async (control: App) => {
    useErrorFormat(control, 'problem');
    control.addHook('preValidation', rejectNulCharacters);
    control.addHook('onRoute', (route) => {
      route.bodyLimit ??= deps.config.controlBodyLimit;
    });
    await control.register(controlAuthRoutes, deps);
    await control.register(async (tenantScope) => {
      tenantScope.decorateRequest('tenantId', '');
      tenantScope.addHook('onRequest', async (request) => {
        request.tenantId = await tenantForSession(deps, bearerToken(request));
      });
      await tenantScope.register(controlKeyRoutes, deps);
      await tenantScope.register(controlUsageRoutes, deps);
      await tenantScope.register(controlLimitRoutes, deps);
    });
  });
  // GATEWAY_ACCOUNTS_*: the account service's sign-in, beside whatever the caller plugs in.
  const accounts = deps.config.accounts ? accountSignIn(deps.config.accounts) : {};
  await registerConsole(app, deps, {
    signInButtons: [...(accounts.signInButtons ?? []), ...(consoleOptions.signInButtons ?? [])],
    signInRoutes: [...(accounts.signInRoutes ?? []), ...(consoleOptions.signInRoutes ?? [])],
  });
}

/** A whole app serving only the control plane (tests, and a control-plane-only deployment). */
export async function buildControlApp(deps: GatewayDeps): Promise<App> {
  const app = await createHttpApp({
    logger: deps.log,
    metrics: deps.metrics,
    bodyLimit: deps.config.controlBodyLimit,
    trustProxy: deps.config.trustProxy,
    title: 'AI gateway control plane',
    version: '0.1.0',
  });
  await registerControlPlane(app, deps);
  return app;
}

/**
 * The whole gateway: health and readiness (open), metrics (as GATEWAY_METRICS_* say), the control plane
 * (problem+json) and the OpenAI-compatible data plane under /v1 (OpenAI's
 * error shape, its own 404s included, and the data plane's body limit).
 */
export async function buildGatewayApp(deps: GatewayDeps, dataPlane: DataPlaneRouteDeps, draining: () => boolean): Promise<App> {
  const app = await createHttpApp({
    logger: deps.log,
    metrics: deps.metrics,
    bodyLimit: deps.config.controlBodyLimit,
    trustProxy: deps.config.trustProxy,
    title: 'AI gateway',
    version: '0.1.0',
    // Every call's id is ours: it is the primary key of its usage record (a client's id could collide).
    acceptRequestId: false,
  });
  await app.register(healthRoutes, { db: deps.db, migrations: gatewayMigrations, metrics: deps.metrics, metricsExposure: deps.config.metricsExposure, draining });
  await registerControlPlane(app, deps);
  await app.register(
    async (v1: App) => {
      // OpenAI's error shape, but a request carrying anthropic-version comes from an Anthropic client (GET /v1/models
      // included), and anything under /v1/messages is Anthropic's API (a method it does not serve, a key refused before
      // routing): their errors in Anthropic's shape.
      const anthropicClient = (request: FastifyRequest) => request.headers['anthropic-version'] !== undefined || request.url.startsWith('/v1/messages');
      const openai = { error: errorHandler('openai'), notFound: notFoundHandler('openai') };
      const anthropic = { error: errorHandler('anthropic'), notFound: notFoundHandler('anthropic') };
      v1.setNotFoundHandler((request, reply) => (anthropicClient(request) ? anthropic : openai).notFound(request, reply));
      v1.setErrorHandler((error: FastifyError, request, reply) => (anthropicClient(request) ? anthropic : openai).error(error, request, reply));
      await dataPlaneRoutes(v1, dataPlane);
    },
    { prefix: '/v1' },
  );
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
