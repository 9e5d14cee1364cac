import { HttpProblem } from '../../platform/errors.ts';
import { LocalFailure } from '../routing/local-failure.ts';

/**
 * Upstream failures as the errors the client sees, shared by every wire
 * format: which status to answer with, which stable code, which headers
 * survive. The status is what the OpenAI SDKs expect for the situation:
 * the provider's 4xx refusals pass as they are (401 stays 401, 429 keeps its
 * Retry-After), an overloaded provider (Anthropic's 529) becomes 503, and
 * any other provider 5xx becomes 502 (the gateway's upstream failed).
 */

/** The status and code to answer an upstream non-2xx with. */
export function mapUpstreamStatus(status: number): { status: number; code: string } {
  if (status === 529) return { status: 503, code: 'upstream_overloaded' };
  if (status >= 500 || status < 400) return { status: 502, code: 'upstream_error' };
  return { status, code: FALLBACK_CODES[status] ?? 'upstream_refused' };
}

/** Codes for 4xx answers whose body names none (OpenAI often sends `code: null`). */
const FALLBACK_CODES: Record<number, string> = {
  400: 'upstream_bad_request',
  401: 'upstream_authentication_failed',
  403: 'upstream_permission_denied',
  404: 'upstream_not_found',
  413: 'upstream_request_too_large',
  422: 'upstream_unprocessable',
  429: 'upstream_rate_limited',
};

export interface UpstreamErrorFields {
  message: string | undefined;
  type: string | undefined;
  code: string | undefined;
  param: string | undefined;
}

/**
 * The error for an upstream answer of `status` with what its body said.
 * The provider's code is kept for 4xx; 5xx get the gateway's code (the
 * client's request was not at fault), the provider's message kept for both.
 */
export function upstreamHttpError(
  provider: string,
  status: number,
  fields: UpstreamErrorFields | undefined,
  headers: Record<string, string | string[] | undefined>,
): HttpProblem {
  const mapped = mapUpstreamStatus(status);
  let message = fields?.message || `The ${provider} API answered HTTP ${status}.`;
  let code = mapped.status < 500 && fields?.code ? fields.code : mapped.code;
  // The provider refused the tenant's stored provider key, not the client's gateway key: say so, with
  // a code of our own (the provider's `invalid_api_key` would read as the gateway key being wrong).
  if (status === 401 || status === 403) {
    code = mapped.code;
    message = `The ${provider} API refused the ${provider} key stored for this tenant: ${message}`;
  }
  const kept: Record<string, string> = {};
  const retryAfter = retryAfterOf(headers);
  if (retryAfter !== undefined && (mapped.status === 429 || mapped.status === 503)) kept['retry-after'] = retryAfter;
  return new HttpProblem(mapped.status, code, message, {
    type: mapped.status >= 500 ? 'api_error' : fields?.type,
    param: fields?.param,
    headers: kept,
  });
}

/** Retry-After when it is a valid value (RFC 9110 section 10.2.3: delay-seconds or an HTTP-date). */
function retryAfterOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return trimmed;
  return trimmed.length < 64 && !Number.isNaN(Date.parse(trimmed)) ? trimmed : undefined;
}

/** The upstream body ended before the stream's terminal event. */
export const upstreamStreamIncomplete = (provider: string) =>
  new HttpProblem(502, 'upstream_stream_incomplete', `The ${provider} API stream ended before the answer was complete.`, {
    type: 'api_error',
  });

/**
 * The upstream sent a stream line or event over the parser's bound
 * (providers/sse.ts): the stream is cut there. The bound is the gateway's,
 * so it is a LocalFailure: not retried, counted on no circuit.
 */
export const upstreamEventTooLarge = (provider: string, limit: number) =>
  new LocalFailure(502, 'upstream_event_too_large', `The ${provider} API sent a stream event larger than ${limit} characters; the stream was cut.`, {
    type: 'api_error',
  });
