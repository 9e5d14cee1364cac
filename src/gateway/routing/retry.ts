import type { HttpProblem } from '../../platform/errors.ts';
import type { RoutingConfig } from '../config.ts';
import type { Blame } from './circuit-breaker.ts';
import { LocalFailure } from './local-failure.ts';

/**
 * What a failed attempt leads to, by the error it ended with:
 * - `retry`: the same model again after a backoff (429, 408, any 5xx the
 *   gateway answers for a provider: errors, overload, timeouts, a connection
 *   that failed, an answer that could not be read), then its fallbacks;
 * - `other-provider`: no retry, but a fallback on another provider (401 and
 *   403: the provider refused the tenant's key, which a retry cannot change
 *   and another model of the same provider would meet again);
 * - `stop`: the answer stands (any other 4xx: the request itself was
 *   refused, and would be by a fallback too; 499: the client left; a
 *   LocalFailure: the gateway's side of the wire failed, which no other
 *   attempt would change).
 * `counts`: which circuit breakers the failure counts against
 * (routing/circuit-breaker.ts). Only an upstream's own trouble counts:
 * - 'origin' (the tenant's own circuit, and the origin's shared one under
 *   its distinct-tenants rule): the upstream could not be reached or failed
 *   (connect errors, timeouts, 5xx and 529);
 * - 'own' (the tenant's own circuit only): the upstream answered 2xx with
 *   something unreadable (a base URL of this tenant's pointing at something
 *   that is no API says nothing about the origin for others);
 * - 'nowhere': 429 (a tenant's own rate limit), 408, refused keys, any
 *   other 4xx, the client gone, and every LocalFailure.
 */
export interface FailurePlan {
  next: 'retry' | 'other-provider' | 'stop';
  counts: Blame | 'nowhere';
}

/** Upstream-side failures of this target alone, not its origin's (see FailurePlan). */
const OWN_ONLY = new Set(['upstream_invalid_response']);

export function planAfterFailure(problem: HttpProblem): FailurePlan {
  if (problem instanceof LocalFailure) return { next: 'stop', counts: 'nowhere' };
  const { status } = problem;
  if (status === 499) return { next: 'stop', counts: 'nowhere' };
  if (status === 429 || status === 408) return { next: 'retry', counts: 'nowhere' };
  if (status >= 500) return { next: 'retry', counts: OWN_ONLY.has(problem.code) ? 'own' : 'origin' };
  if (status === 401 || status === 403) return { next: 'other-provider', counts: 'nowhere' };
  return { next: 'stop', counts: 'nowhere' };
}

/**
 * How long to wait before retry number `retry` (0 for the first): the
 * provider's Retry-After when it sent one (RFC 9110 section 10.2.3: seconds
 * or an HTTP-date), else exponential backoff with full jitter (AWS
 * Architecture Blog, "Exponential Backoff and Jitter"). The caller compares
 * it with `retryMaxDelayMs`: a provider asking for a longer pause is left to
 * the fallbacks rather than waited for.
 */
export function retryDelayMs(retry: number, problem: HttpProblem, config: RoutingConfig, nowMs: number, random = Math.random): number {
  const asked = retryAfterMs(problem.headers['retry-after'], nowMs);
  if (asked !== undefined) return asked;
  return Math.floor(random() * Math.min(config.retryMaxDelayMs, config.retryBaseDelayMs * 2 ** retry));
}

function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d{1,9}$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
