import { HttpProblem } from '../../platform/errors.ts';

/**
 * A failed attempt that is no upstream's doing: the request never left the
 * gateway (building or translating it threw, or the HTTP client refused
 * what it was given), or the answer arrived and the gateway's own limits or
 * code refused it. Decided by where it failed (pipeline/stages/upstream.ts
 * wraps each side of the wire), never by an error's message. It is answered
 * as what it is, and is never retried, never falls back and counts on no
 * circuit (routing/retry.ts): another tenant, or this tenant's next call,
 * must not pay for it.
 */
export class LocalFailure extends HttpProblem {}

/** Building the upstream request threw on the request's content (too deep, too large for the translation). */
export const requestNotTranslatable = (provider: string, cause: unknown) =>
  new LocalFailure(400, 'request_not_translatable', `The request could not be translated into a request to the ${provider} API; it is too large or too deeply nested.`, {
    type: 'invalid_request_error',
    cause,
  });

/**
 * The HTTP client refused the request before connecting: a header or path it
 * cannot write. Only the tenant's stored provider key and base URL go into
 * those (clients' headers were checked on the way in), so the sentence says
 * where to look.
 */
export const requestNotSendable = (provider: string, cause: unknown) =>
  new LocalFailure(400, 'request_not_sendable', `The request could not be sent to the ${provider} API: the ${provider} key or base URL stored for this tenant holds characters HTTP does not allow.`, {
    type: 'invalid_request_error',
    cause,
  });

/** Our own code failed on one side of the wire or the other: a bug, logged with its stack (5xx are). */
export const localBug = (cause: unknown) => new LocalFailure(500, 'internal_error', 'An internal error occurred; it has been logged.', { type: 'api_error', cause });

/** A non-streamed answer larger than GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES: the gateway's limit, not the origin's fault. */
export const upstreamResponseTooLarge = (limit: number) =>
  new LocalFailure(502, 'upstream_response_too_large', `The provider's answer is larger than ${limit} bytes.`, { type: 'api_error' });
