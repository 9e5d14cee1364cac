import pino from 'pino';
import { Type } from 'typebox';
import { HttpProblem } from '../../src/platform/errors.ts';
import { type App, createHttpApp, type ErrorFormat, useErrorFormat } from '../../src/platform/http.ts';
import { createMetrics } from '../../src/platform/metrics.ts';

/** An error class of a scope's own domain, as OAuthError is the account service's. */
export class DomainError extends Error {
  readonly code = 'invalid_token';
}

/** What the fixture hands the formats as mapError. */
export function mapDomainError(error: Error): HttpProblem | undefined {
  if (!(error instanceof DomainError)) return undefined;
  return new HttpProblem(401, error.code, error.message, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
}

/**
 * A small app on the platform's HTTP factory, no service in it: one route per
 * kind of error (validation, our own problem, a typed problem, a domain error,
 * a crash, a form-only route), and a /v1 scope in the OpenAI format.
 */
export async function buildFixtureApp(options: { errorFormat: ErrorFormat }): Promise<App> {
  const app = await createHttpApp({
    logger: pino({ level: 'silent' }),
    metrics: createMetrics('fixture', false),
    bodyLimit: 1024,
    trustProxy: false,
    title: 'Fixture',
    version: '0',
    errorFormat: options.errorFormat,
    mapError: mapDomainError,
  });
  const thing = { body: Type.Object({ name: Type.String() }) };
  app.post('/things', { schema: thing }, async (request) => ({ name: request.body.name }));
  app.get('/conflict', async () => {
    throw new HttpProblem(409, 'thing_taken', 'That name is taken.', { param: 'name', headers: { 'retry-after': '7' } });
  });
  app.get('/typed', async () => {
    throw new HttpProblem(429, 'rate_limit_exceeded', 'Slow down.', { type: 'tokens' });
  });
  app.get('/domain', async () => {
    throw new DomainError("The token is 'gone'.");
  });
  app.get('/crash', async () => {
    throw new Error('secret detail that must not be sent');
  });
  app.post('/form', { config: { accepts: 'application/x-www-form-urlencoded' } }, async () => ({}));
  await app.register(
    async (scope: App) => {
      useErrorFormat(scope, 'openai', { mapError: mapDomainError });
      scope.post('/things', { schema: thing }, async (request) => ({ name: request.body.name }));
      scope.get('/domain', async () => {
        throw new DomainError("The token is 'gone'.");
      });
    },
    { prefix: '/v1' },
  );
  return app;
}
