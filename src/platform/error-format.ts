import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HttpProblem } from './errors.ts';
import type { App } from './http.ts';
import { toProblem } from './problem-mapping.ts';

/**
 * The shape errors are sent in, chosen per app or per scope:
 * - `problem`: RFC 9457 application/problem+json with our stable `code` (our own APIs);
 * - `oauth`: RFC 6749 section 5.2 `{error, error_description}`, Cache-Control: no-store;
 * - `openai`: `{error: {message, type, code, param}}`, as OpenAI's API and SDKs have it;
 * - `anthropic`: `{type: "error", error: {type, message}, request_id}` and a
 *   `request-id` header, as Anthropic's API and SDKs have it.
 */
export type ErrorFormat = 'problem' | 'oauth' | 'openai' | 'anthropic';

export interface ErrorFormatOptions {
  /**
   * The scope's own error classes (an OAuthError): the problem to send, its
   * `code` being the format's error code; undefined for the usual mapping.
   */
  mapError?: (error: Error) => HttpProblem | undefined;
}

/**
 * Makes `scope` answer errors in `format`: every error its routes and hooks
 * throw, framework errors included (malformed JSON, body too large, 415,
 * validation). A scope registered with a prefix also gets its own 404 in the
 * format (Fastify keeps one not-found handler per prefix).
 */
export function useErrorFormat(scope: App, format: ErrorFormat, options: ErrorFormatOptions = {}): void {
  scope.setErrorHandler(errorHandler(format, options));
  if (scope.prefix !== '') scope.setNotFoundHandler(notFoundHandler(format));
}

/** What a page says about a failure of ours: never the error itself. */
const SERVER_FAULT = 'Something went wrong on our side; try again later.';

/**
 * The error format of pages people read (verification, password reset,
 * sign-in and consent pages): every refusal, the framework's included (a
 * body over the limit, too many form fields, a wrong content type), is a
 * page drawn by `page`; a 5xx gets a generic sentence, never the error's.
 * `keepApiProblems`: problems thrown as HttpProblem (an X-Api-Key gate in
 * front of the pages) keep the API's documented problem+json.
 */
export function usePageErrors(
  scope: App,
  page: (reply: FastifyReply, status: number, message: string) => FastifyReply,
  options: { keepApiProblems?: boolean } = {},
): void {
  scope.setErrorHandler(function sendPageError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    if (options.keepApiProblems && error instanceof HttpProblem) return sendProblem(request, reply, error);
    const problem = toProblem(error, request);
    logRefusal(request, problem);
    return page(reply, problem.status, problem.status >= 500 ? SERVER_FAULT : problem.message);
  });
}

export function errorHandler(format: ErrorFormat, options: ErrorFormatOptions = {}) {
  const send = SENDERS[format];
  return function sendError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const mapped = options.mapError?.(error);
    if (mapped) return send(request, reply, mapped);
    if (format === 'oauth') {
      // RFC 6749 covers the protocol's errors. A problem of the HTTP API around it (the X-Api-Key
      // gate in front of the OAuth paths) and a server error keep the API's documented problem+json.
      if (error instanceof HttpProblem) return sendProblem(request, reply, error);
      const problem = toProblem(error, request);
      if (problem.status >= 500) return sendProblem(request, reply, problem);
      return send(request, reply, invalidRequest(problem));
    }
    return send(request, reply, toProblem(error, request));
  };
}

export function notFoundHandler(format: ErrorFormat) {
  const send = SENDERS[format];
  return function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const problem = new HttpProblem(404, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}.`);
    return send(request, reply, format === 'oauth' ? invalidRequest(problem) : problem);
  };
}

type Sender = (request: FastifyRequest, reply: FastifyReply, problem: HttpProblem) => FastifyReply;

/** One log line per refusal: 4xx at info with the code, 5xx at error with the cause's stack. */
function logRefusal(request: FastifyRequest, problem: HttpProblem): void {
  if (problem.status >= 500) request.log.error({ err: problem.cause ?? problem, code: problem.code }, 'request failed');
  else request.log.info({ code: problem.code, status: problem.status }, 'request refused');
}

/** RFC 9457 problem details. */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: HttpProblem): FastifyReply {
  logRefusal(request, problem);
  return reply
    .status(problem.status)
    .headers(problem.headers)
    .type('application/problem+json')
    .send({
      type: 'about:blank',
      title: STATUS_CODES[problem.status] ?? 'Error',
      status: problem.status,
      code: problem.code,
      detail: problem.message,
      request_id: request.id,
      ...(problem.errors ? { errors: problem.errors } : {}),
    });
}

/** RFC 6749 section 5.2: the error code, a description, and never cached. */
function sendOAuthError(request: FastifyRequest, reply: FastifyReply, problem: HttpProblem): FastifyReply {
  logRefusal(request, problem);
  return reply
    .status(problem.status)
    .headers(problem.headers)
    .header('cache-control', 'no-store')
    .send({ error: problem.code, error_description: oauthDescription(problem.message) });
}

/** A framework refusal (malformed body, wrong content type, no route) as RFC 6749's invalid_request. */
function invalidRequest(problem: HttpProblem): HttpProblem {
  return new HttpProblem(problem.status, 'invalid_request', problem.message, { cause: problem.cause });
}

/** RFC 6749 sections 4.1.2.1 and 5.2: error_description is printable ASCII without '"' and '\\'. */
export function oauthDescription(text: string): string {
  return text.replaceAll('"', "'").replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?');
}

/** OpenAI's error object; `type` is the problem's own, else the one OpenAI's API sends for the status. */
function sendOpenAIError(request: FastifyRequest, reply: FastifyReply, problem: HttpProblem): FastifyReply {
  logRefusal(request, problem);
  return reply
    .status(problem.status)
    .headers(problem.headers)
    .send(openaiErrorBody(problem));
}

/** `{error: {message, type, code, param}}`: OpenAI's error body (also sent as the last event of a failed stream). */
export function openaiErrorBody(problem: HttpProblem): { error: { message: string; type: string; code: string; param: string | null } } {
  return {
    error: { message: problem.message, type: problem.type ?? openaiType(problem.status), code: problem.code, param: problem.param ?? null },
  };
}

/**
 * OpenAI's API answers a wrong key (401) and a wrong request (400, 404, 413,
 * 415, 422) alike with `invalid_request_error`, a rate limit with the kind of
 * limit hit (`requests` here: our limits count requests), a failure of its
 * own with `server_error`.
 */
export function openaiType(status: number): string {
  if (status === 429) return 'requests';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** Anthropic's error object (Errors reference); `type` by status, which the Anthropic SDKs map to their exception classes. */
function sendAnthropicError(request: FastifyRequest, reply: FastifyReply, problem: HttpProblem): FastifyReply {
  logRefusal(request, problem);
  return reply
    .status(problem.status)
    .headers(problem.headers)
    .header('request-id', request.id)
    .send({ ...anthropicErrorBody(problem), request_id: request.id });
}

/** `{type: "error", error: {type, message}}`: Anthropic's error body (also the data of a failed stream's `error` event). */
export function anthropicErrorBody(problem: HttpProblem): { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type: anthropicType(problem.status), message: problem.message } };
}

/**
 * The error type Anthropic's API sends for a status (Errors reference): the
 * SDKs pick their exception class by status and show the type, so both
 * agree. 529, and the gateway's own 503 (a provider out of reach for a
 * while), are overloaded_error; 402 billing_error and 504 timeout_error are
 * Anthropic's own; any other 4xx is invalid_request_error, any other 5xx
 * api_error.
 */
export function anthropicType(status: number): string {
  return ANTHROPIC_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const SENDERS: Record<ErrorFormat, Sender> = { problem: sendProblem, oauth: sendOAuthError, openai: sendOpenAIError, anthropic: sendAnthropicError };
