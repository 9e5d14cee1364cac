import type { HttpProblem } from '../../../platform/errors.ts';

/**
 * The Anthropic error type for an HTTP status (Messages API reference,
 * "Errors"): the SDKs pick their exception class by status and show the
 * type, so both must agree. 529 and 503 are overloaded_error (the gateway
 * answers an overloaded provider with 503); 402 billing_error and 504
 * timeout_error are Anthropic's own types for those statuses; any other
 * 4xx is invalid_request_error, any other 5xx api_error.
 */
export function anthropicErrorType(status: number): string {
  const known = TYPES[status];
  if (known !== undefined) return known;
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

const TYPES: Record<number, string> = {
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

/** `{type: "error", error: {type, message}}`: Anthropic's error body, as a non-streamed answer and as the `error` event of a stream. */
export function anthropicErrorBody(problem: HttpProblem): { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type: anthropicErrorType(problem.status), message: problem.message } };
}
