import type { FastifyError, FastifyRequest } from 'fastify';
import { HttpProblem } from './errors.ts';
import { MAX_FORM_FIELDS } from './form.ts';
import { BODY_TOO_DEEP } from './json-depth.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The content type a route takes, named in its 415 answer (default application/json). */
    accepts?: string;
  }
}

/** Framework errors a client can cause, with the code and sentence we answer them with. */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string; detail: (accepts: string) => string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'malformed_json', detail: () => 'The request body is not valid JSON.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: 'malformed_json',
    detail: () => 'The request body is empty but Content-Type says JSON.',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'body_too_large', detail: () => 'The request body is larger than allowed.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    detail: (accepts) => `The Content-Type of the request is not supported; send ${accepts}.`,
  },
  ERR_FORM_TOO_MANY_FIELDS: {
    status: 400,
    code: 'too_many_fields',
    detail: () => `The form has more than ${MAX_FORM_FIELDS} fields.`,
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_content_length',
    detail: () => 'Content-Length does not match the body.',
  },
  ERR_BODY_TOO_DEEP: { status: 400, code: 'body_too_deep', detail: () => BODY_TOO_DEEP },
};

/**
 * Maps any error to the problem we answer with: an HttpProblem as it is,
 * validation errors naming the field, framework errors with their code and
 * sentence, any other 4xx as bad_request, everything else as a 500 whose
 * cause is only logged.
 */
export function toProblem(error: FastifyError, request?: FastifyRequest): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error.validation) {
    const errors = error.validation.map((v) => {
      const params = v.params as { missingProperty?: string; additionalProperty?: string };
      // A refused key of a map (JSON Schema propertyNames): the map is the field, the key is named in the sentence.
      const key = (v as { propertyName?: string }).propertyName;
      // A missing field, or one a closed schema does not know, is named itself rather than its parent.
      const named = params.missingProperty ?? params.additionalProperty;
      const path = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
      const field = named ? (path ? `${path}.${named}` : named) : path || error.validationContext || 'body';
      const message = params.missingProperty
        ? 'is required'
        : params.additionalProperty
          ? 'is not a known field'
          : key !== undefined
            ? `has a name ${JSON.stringify(key)} that ${v.message ?? 'is invalid'}`
            : (v.message ?? 'is invalid');
      return { field, message };
    });
    const first = errors[0];
    const detail = first ? `${error.validationContext ?? 'body'} field "${first.field}" ${first.message}.` : 'Invalid request.';
    return new HttpProblem(400, 'validation_failed', detail, { errors, cause: error });
  }
  const known = error.code ? FRAMEWORK_ERRORS[error.code] : undefined;
  if (known) {
    const accepts = request?.routeOptions.config.accepts ?? 'application/json';
    return new HttpProblem(known.status, known.code, known.detail(accepts), { cause: error });
  }
  if (databaseUnavailable(error)) {
    return new HttpProblem(503, 'database_unavailable', 'The database cannot be reached right now; try again shortly.', {
      cause: error,
      headers: { 'retry-after': '5' },
      type: 'api_error',
    });
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new HttpProblem(status, 'bad_request', 'The request could not be processed.', { cause: error });
  }
  return new HttpProblem(500, 'internal_error', 'An internal error occurred; it has been logged.', { cause: error });
}

/** PostgreSQL SQLSTATE classes and codes that mean the server is not there (rather than that the query is wrong). */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[1-3]$|53300$)/;
const UNAVAILABLE_NET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/**
 * Whether an error says the database is away (restarting, unreachable, out
 * of connections): the pg driver's connection errors, PostgreSQL's own
 * shutdown codes. Such a request is a 503 with Retry-After, not a 500: the
 * service and the request are fine, and the pool reconnects by itself once
 * the server is back (test/reliability/postgres-restart.test.ts).
 */
export function databaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_NET.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
    if (/^Connection terminated|^timeout exceeded when trying to connect|Client has encountered a connection error/.test(e.message)) return true;
  }
  return false;
}
