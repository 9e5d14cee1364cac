import type { Behaviour } from './behaviour.ts';

/**
 * Error answers in each provider's real shape.
 * - OpenAI: `{"error": {"message", "type", "param", "code"}}` (API reference,
 *   "Error codes"); a 429 carries type "requests" and code
 *   "rate_limit_exceeded", a bad key code "invalid_api_key".
 * - Anthropic: `{"type": "error", "error": {"type", "message"}, "request_id"}`
 *   with the types of its "Errors" page: invalid_request_error 400,
 *   authentication_error 401, not_found_error 404, rate_limit_error 429,
 *   api_error 500, overloaded_error 529; and a `request-id` header.
 */
export type Format = 'openai' | 'anthropic';
export type ErrorKind = 'invalid_request' | 'authentication' | 'not_found' | 'rate_limit' | 'server' | 'overloaded';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const STATUS: Record<ErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  not_found: 404,
  rate_limit: 429,
  server: 500,
  overloaded: 529,
};

const OPENAI: Record<ErrorKind, { type: string; code: string | null; message: string }> = {
  invalid_request: { type: 'invalid_request_error', code: null, message: 'Invalid request.' },
  authentication: {
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    message: 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
  },
  not_found: { type: 'invalid_request_error', code: null, message: 'Not found.' },
  rate_limit: {
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 1s.',
  },
  server: { type: 'server_error', code: null, message: 'The server had an error while processing your request. Sorry about that!' },
  overloaded: { type: 'server_error', code: null, message: 'The engine is currently overloaded, please try again later.' },
};

const ANTHROPIC: Record<ErrorKind, { type: string; message: string }> = {
  invalid_request: { type: 'invalid_request_error', message: 'Invalid request.' },
  authentication: { type: 'authentication_error', message: 'invalid x-api-key' },
  not_found: { type: 'not_found_error', message: 'Not found' },
  rate_limit: { type: 'rate_limit_error', message: 'Number of requests has exceeded your per-minute rate limit.' },
  server: { type: 'api_error', message: 'Internal server error' },
  overloaded: { type: 'overloaded_error', message: 'Overloaded' },
};

const JSON_TYPE = 'application/json';

/** The error object alone (OpenAI's `error`, or Anthropic's whole envelope): also the payload of a mid-stream error event. */
export function errorPayload(format: Format, kind: ErrorKind, message?: string, param: string | null = null): unknown {
  if (format === 'openai') {
    const e = OPENAI[kind];
    return { error: { message: message ?? e.message, type: e.type, param, code: e.code } };
  }
  const e = ANTHROPIC[kind];
  return { type: 'error', error: { type: e.type, message: message ?? e.message } };
}

export function errorAnswer(format: Format, kind: ErrorKind, requestId: string, message?: string, param?: string | null): Answer {
  const payload = errorPayload(format, kind, message, param) as Record<string, unknown>;
  if (format === 'anthropic') {
    return { status: STATUS[kind], headers: { 'content-type': JSON_TYPE, 'request-id': requestId }, body: JSON.stringify({ ...payload, request_id: requestId }) };
  }
  return { status: STATUS[kind], headers: { 'content-type': JSON_TYPE, 'x-request-id': requestId }, body: JSON.stringify(payload) };
}

const STATUS_FAULTS: Partial<Record<string, ErrorKind>> = { '401': 'authentication', '429': 'rate_limit', '500': 'server', '529': 'overloaded' };

/**
 * The answer a status fault (or `stream-error` on a non-streamed request)
 * sends instead of a completion, or undefined when the behaviour has none.
 */
export function faultAnswer(format: Format, behaviour: Behaviour, streamed: boolean, requestId: string): Answer | undefined {
  const { fault } = behaviour;
  if (fault === undefined) return undefined;
  let kind = STATUS_FAULTS[fault];
  // A failure that a stream reports mid-way comes as a status when nothing is streamed (OpenAI 500, Anthropic 529).
  if (fault === 'stream-error' && !streamed) kind = format === 'openai' ? 'server' : 'overloaded';
  if (kind === undefined) return undefined;
  const answer = errorAnswer(format, kind, requestId);
  if (kind === 'rate_limit') answer.headers['retry-after'] = String(behaviour.retryAfterS);
  return answer;
}

/** The mid-stream error event each format sends: OpenAI a bare data event with `error`; Anthropic `event: error`. */
export function streamErrorEvent(format: Format): string {
  if (format === 'openai') return `data: ${JSON.stringify(errorPayload('openai', 'server'))}\n\n`;
  return `event: error\ndata: ${JSON.stringify(errorPayload('anthropic', 'overloaded'))}\n\n`;
}
