import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { EnvReader } from './config.ts';
import { HttpProblem } from './errors.ts';
import { type App, apiKeyMatcher, bearerToken, createHttpApp } from './http.ts';
import type { Metrics } from './metrics.ts';

/**
 * Where a service serves GET /metrics (Prometheus). The figures are the whole
 * service's (the gateway's cost totals and circuit states among them), so
 * they are not for everyone who can reach the service's port:
 * - `{P}_METRICS_PORT`: served on a port of its own (same host), and no
 *   longer on the service's port; firewall that port as an internal one.
 * - `{P}_METRICS_TOKEN` (at least 32 characters): every GET /metrics needs
 *   `Authorization: Bearer <token>` (compared in constant time), on
 *   whichever port serves it.
 * - neither: public on the service's port in development (`npm start` as
 *   ever), and not served at all when NODE_ENV=production.
 */
export interface MetricsExposure {
  /** The settings' prefix (`AUTH`, `GATEWAY`), for the start-up line. */
  prefix: string;
  /** `{P}_METRICS_PORT`; undefined: the service's own port (or nowhere). */
  port: number | undefined;
  /** `{P}_METRICS_TOKEN`. */
  token: string | undefined;
  /** Whether the service's own port serves /metrics. */
  onServicePort: boolean;
}

/** Reads `{prefix}_METRICS_PORT` and `{prefix}_METRICS_TOKEN` (problems collected on `r`). */
export function readMetricsExposure(r: EnvReader, prefix: string, production: boolean): MetricsExposure {
  const port = r.string(`${prefix}_METRICS_PORT`) === undefined ? undefined : r.int(`${prefix}_METRICS_PORT`, 0, 0, 65535);
  const token = r.string(`${prefix}_METRICS_TOKEN`);
  if (token !== undefined && token.length < 32) r.problems.push(`${prefix}_METRICS_TOKEN must be at least 32 characters`);
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) r.problems.push(`${prefix}_METRICS_TOKEN must be visible ASCII characters (it is sent as a bearer token)`);
  return { prefix, port, token, onServicePort: port === undefined && (token !== undefined || !production) };
}

/** The start-up line saying where /metrics is served, and to whom. */
export function metricsExposureLine(exposure: MetricsExposure, metricsUrl: string | undefined): string {
  const p = exposure.prefix;
  const guard = exposure.token ? `only with "Authorization: Bearer" and ${p}_METRICS_TOKEN` : 'to anyone who reaches that port';
  if (metricsUrl) return `metrics: /metrics is served at ${metricsUrl}/metrics (${p}_METRICS_PORT), ${guard}; the service's own port does not serve it`;
  if (exposure.onServicePort) return `metrics: /metrics is served on the service's port, ${guard}`;
  return `metrics: /metrics is not served: set ${p}_METRICS_TOKEN (a bearer token) or ${p}_METRICS_PORT (a port of its own) to scrape it (NODE_ENV=production never serves it publicly)`;
}

/** GET /metrics, behind the bearer token when one is set. */
export function metricsRoute(app: App, metrics: Metrics, token: string | undefined): void {
  const matches = token === undefined ? undefined : apiKeyMatcher([token]);
  app.get('/metrics', { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    if (matches && !matches(bearerToken(request))) {
      throw new HttpProblem(401, 'invalid_metrics_token', 'GET /metrics needs "Authorization: Bearer" with the metrics token.', {
        headers: { 'www-authenticate': 'Bearer' },
      });
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}

/** The listener of `{P}_METRICS_PORT`: /metrics and nothing else (every other path 404). */
export async function startMetricsServer(options: { exposure: MetricsExposure; metrics: Metrics; log: Logger; host: string }): Promise<{ url: string; close(): Promise<void> }> {
  const app = await createHttpApp({
    logger: options.log,
    metrics: options.metrics,
    bodyLimit: 1024,
    trustProxy: false,
    title: 'metrics',
    version: '0.1.0',
  });
  metricsRoute(app, options.metrics, options.exposure.token);
  const url = await app.listen({ host: options.host, port: options.exposure.port ?? 0 });
  return { url, close: () => app.close() };
}
