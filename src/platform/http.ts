import { hash, timingSafeEqual } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { uuidV7 } from './crypto.ts';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { type ErrorFormat, type ErrorFormatOptions, errorHandler, notFoundHandler } from './error-format.ts';
import { HttpProblem } from './errors.ts';
import { BodyTooDeepError, jsonNestsDeeperThan, MAX_JSON_DEPTH } from './json-depth.ts';
import type { Metrics } from './metrics.ts';
import { fastifyTrustProxy, type TrustProxy } from './trust-proxy.ts';

export { sendProblem, useErrorFormat, usePageErrors, type ErrorFormat } from './error-format.ts';
export { toProblem } from './problem-mapping.ts';

export type App = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  Logger,
  TypeBoxTypeProvider
>;

/** RFC 9457 problem details, as every 4xx and 5xx of our own APIs is sent. */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ description: 'Stable machine-readable error code.' }),
    detail: Type.String(),
    request_id: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem' },
);

export interface AppOptions {
  logger: Logger;
  metrics: Metrics;
  bodyLimit: number;
  /** Whose X-Forwarded-For to believe (proxy-addr semantics: the rightmost untrusted hop is the client). */
  trustProxy: TrustProxy;
  title: string;
  version: string;
  /** The shape of every error and 404 (default `problem`); a scope can pick its own with useErrorFormat. */
  errorFormat?: ErrorFormat;
  /** The app's own error classes, for the format (see ErrorFormatOptions). */
  mapError?: ErrorFormatOptions['mapError'];
  /**
   * The longest path parameter (once decoded) a route matches; a longer one is
   * refused before routing (400 malformed_request). Fastify's default, 100,
   * unless set.
   */
  maxParamLength?: number;
  /**
   * Whether an incoming X-Request-Id becomes the request's id (default true:
   * a caller's id ties our log lines to its own). The gateway says false: it
   * keys each call's usage record by the request id, so a client choosing it
   * could make its calls collide and their records be dropped.
   */
  acceptRequestId?: boolean;
}

/**
 * A Fastify instance with our conventions: TypeBox schemas, strict types (no
 * coercion), request ids, errors in the chosen format, metrics, and an OpenAPI
 * document built from the route schemas.
 */
export async function createHttpApp(options: AppOptions): Promise<App> {
  const app = Fastify({
    loggerInstance: options.logger,
    // Per-request access lines cost more than a fast route itself; metrics count requests instead.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit,
    trustProxy: fastifyTrustProxy(options.trustProxy),
    ...(options.maxParamLength ? { routerOptions: { maxParamLength: options.maxParamLength } } : {}),
    requestIdHeader: options.acceptRequestId === false ? false : 'x-request-id',
    // Time-ordered (UUIDv7): the gateway keys its usage records by request id.
    genReqId: () => uuidV7(),
    // removeAdditional off: a schema closed with additionalProperties: false refuses an unknown field (a misspelt
    // setting is a 400 naming it) instead of silently dropping it, which Fastify's default does.
    ajv: { customOptions: { coerceTypes: false, allErrors: false, removeAdditional: false } },
    return503OnClosing: true,
    clientErrorHandler: answerClientError,
    // A path that cannot be percent-decoded is refused before routing: the same two-shaped answer as above.
    frameworkErrors: (err, request, reply) => {
      const [status, code, detail] =
        err.code === 'FST_ERR_BAD_URL'
          ? [400, 'malformed_url', 'The request path is not valid percent-encoding.']
          : [400, 'malformed_request', 'The request could not be routed.'];
      request.log.info({ code, status }, 'request refused');
      void (reply as FastifyReply).status(status).type('application/problem+json; charset=utf-8').send(preRoutingProblem(status, code, detail));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // A request's child logger is made only when something logs: building one costs more than a fast route.
  app.setChildLoggerFactory((logger, bindings, opts) => new LazyChildLogger(() => logger.child(bindings, opts)) as unknown as Logger);
  // Our APIs take JSON only; a text/plain body is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  // Fastify's JSON parser (prototype poisoning refused as before), behind a check of the body's nesting: nothing that
  // walks a body by recursion (JSON.stringify, the gateway's cache key) meets one deeper than MAX_JSON_DEPTH, and such
  // a body is refused before it is built in memory (400 body_too_deep, in the format of the route's scope).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (jsonNestsDeeperThan(body as string, MAX_JSON_DEPTH)) done(new BodyTooDeepError(), undefined);
    else parseJson(request, body as string, done);
  });
  app.addSchema(Problem);
  await app.register(swagger, {
    openapi: { info: { title: options.title, version: options.version }, openapi: '3.1.0' },
  });

  // Callback-style hooks: on the hot path an async hook costs a promise per request.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
  // The request counter and the duration histogram count per label set in place (SummedCounter, SummedHistogram).
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${route}`;
    const counterKey = `${key} ${reply.statusCode}`;
    const counter = options.metrics.httpRequests.child(counterKey, () => ({ route, method: request.method, status: reply.statusCode }));
    counter.inc();
    options.metrics.httpDuration.child(key, () => ({ route, method: request.method })).observe(reply.elapsedTime / 1000);
    done();
  });

  const format = options.errorFormat ?? 'problem';
  app.setNotFoundHandler(notFoundHandler(format));
  app.setErrorHandler(errorHandler(format, { mapError: options.mapError }));
  return app as unknown as App;
}

/** An answer made before any route was chosen, so before its surface is known: RFC 9457 problem details that are also an OpenAI error. */
function preRoutingProblem(status: number, code: string, detail: string) {
  return {
    type: 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    code,
    detail,
    error: { message: detail, type: 'invalid_request_error', code, param: null },
  };
}

/**
 * A request node:http refused before any route saw it (a header section over
 * its 16 KiB, a malformed request line or header, too slow to arrive):
 * answered, then the connection closed, with a body that reads as our
 * problem+json and as an OpenAI error alike, since the path (and so the
 * surface) is not known yet. Fastify's own answer was a third shape.
 */
function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, code, detail] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', 'The request headers are larger than the server accepts (16 KiB in all).']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'The request did not arrive in time.']
        : [400, 'malformed_request', 'The request is not valid HTTP/1.1 (its request line or a header is malformed).'];
  const body = JSON.stringify(preRoutingProblem(status, code, detail));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * Whether `given` is one of `keys`, compared in constant time: both sides as
 * SHA-256 digests (equal length, so timingSafeEqual leaks neither content
 * nor length), every key compared whatever matched.
 */
export function apiKeyMatcher(keys: readonly string[]): (given: unknown) => boolean {
  const digests = keys.map((k) => hash('sha256', k, 'buffer'));
  return (given) => {
    if (typeof given !== 'string') return false;
    const digest = hash('sha256', given, 'buffer');
    let found = false;
    for (const d of digests) found = timingSafeEqual(digest, d) || found;
    return found;
  };
}

/** An onRequest hook that admits only requests carrying one of the API keys (the current one, then any being retired). */
export function requireApiKey(keys: readonly string[]) {
  const matches = apiKeyMatcher(keys);
  // Callback style: an async hook costs a promise per request on every API route.
  return function apiKeyHook(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
    if (!matches(request.headers['x-api-key'])) {
      done(new HttpProblem(401, 'invalid_api_key', 'The X-Api-Key header is missing or wrong.'));
      return;
    }
    done();
  };
}

/** The bearer token of an Authorization header, or undefined. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
  return m?.[1];
}

/**
 * A request's logger, made into a real pino child only when something logs:
 * most requests log nothing, and building a child per request costs more
 * than a fast route. Fastify checks that the log methods exist on every
 * request; they are plain prototype methods here, so nothing is allocated
 * until one is called.
 */
class LazyChildLogger {
  #make: () => Logger;
  #real: Logger | undefined;
  constructor(make: () => Logger) {
    this.#make = make;
  }
  get #logger(): Logger {
    this.#real ??= this.#make();
    return this.#real;
  }
  get level(): string {
    return this.#logger.level;
  }
  set level(value: string) {
    this.#logger.level = value;
  }
  fatal(...args: unknown[]): void {
    (this.#logger.fatal as (...a: unknown[]) => void)(...args);
  }
  error(...args: unknown[]): void {
    (this.#logger.error as (...a: unknown[]) => void)(...args);
  }
  warn(...args: unknown[]): void {
    (this.#logger.warn as (...a: unknown[]) => void)(...args);
  }
  info(...args: unknown[]): void {
    (this.#logger.info as (...a: unknown[]) => void)(...args);
  }
  debug(...args: unknown[]): void {
    (this.#logger.debug as (...a: unknown[]) => void)(...args);
  }
  trace(...args: unknown[]): void {
    (this.#logger.trace as (...a: unknown[]) => void)(...args);
  }
  silent(): void {}
  child(...args: Parameters<Logger['child']>): unknown {
    return this.#logger.child(...args);
  }
}
