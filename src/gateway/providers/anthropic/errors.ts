import type { HttpProblem } from '../../../platform/errors.ts';
import { isObject, parseObject, stringField } from '../json.ts';
import { type UpstreamErrorFields, upstreamHttpError } from '../upstream-errors.ts';

/**
 * Anthropic errors (API reference, "Errors"): `{type: "error", error: {type,
 * message}, request_id}`. The error type becomes the OpenAI `code` (it is
 * stable and says what happened); statuses are mapped in upstream-errors.ts
 * (529 -> 503, 500 -> 502, 4xx as they are).
 */
export function anthropicErrorFields(body: Record<string, unknown> | undefined): UpstreamErrorFields | undefined {
  const error = body?.['error'];
  if (!isObject(error)) return undefined;
  const message = stringField(error, 'message');
  if (message === undefined) return undefined;
  return { message, type: undefined, code: stringField(error, 'type'), param: undefined };
}

/** The HTTP status each Anthropic error type is sent with; used for errors met inside a 200 stream. */
const STATUS_OF_TYPE: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

export function statusOfErrorType(type: string | undefined): number {
  return (type !== undefined && STATUS_OF_TYPE[type]) || 500;
}

export function upstreamError(
  provider: string,
  status: number, body: Buffer, headers: Record<string, string | string[] | undefined>): HttpProblem {
  return upstreamHttpError(provider, status, anthropicErrorFields(parseObject(body.toString('utf8'))), headers);
}

/** An `error` event inside a stream (or an error body with a 2xx status). */
export function embeddedError(provider: string, parsed: Record<string, unknown>): HttpProblem {
  const fields = anthropicErrorFields(parsed);
  return upstreamHttpError(provider, statusOfErrorType(fields?.code), fields, {});
}
