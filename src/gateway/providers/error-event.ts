import type { HttpProblem } from '../../platform/errors.ts';
import { sseEvent } from './sse.ts';

/**
 * The OpenAI error type for a status, when a problem names none: the values
 * OpenAI's API sends (its SDKs pick the error class from the HTTP status, and
 * show `type` and `code` as given).
 */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** `{error: {message, type, code, param}}`, the OpenAI error body, as JSON. */
export function openAiErrorJson(problem: HttpProblem): string {
  return JSON.stringify({
    error: {
      message: problem.message,
      type: problem.type ?? openAiErrorType(problem.status),
      code: problem.code,
      param: problem.param ?? null,
    },
  });
}

/**
 * The event that ends a failed stream: `data: {"error": {...}}` and no
 * [DONE]. The OpenAI SDKs raise an APIError when a chunk carries `error`.
 */
export function errorEvent(problem: HttpProblem): string {
  return sseEvent(openAiErrorJson(problem));
}
