import { oauthDescription } from '../../platform/error-format.ts';
import { HttpProblem } from '../../platform/errors.ts';

/**
 * RFC 6749 errors (sections 4.1.2.1 and 5.2, RFC 7009, RFC 8707). Thrown by
 * the OAuth checks; the routes render them as JSON, as an error redirect, or
 * (before the redirect URI is trusted) as an error page.
 */
export class OAuthError extends Error {
  readonly error: string;
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(error: string, description: string, status = 400, headers: Record<string, string> = {}) {
    super(oauthDescription(description));
    this.name = 'OAuthError';
    this.error = error;
    this.status = status;
    this.headers = headers;
  }
}

/** For the platform's `oauth` error format: an OAuthError as the problem it sends (its code is the RFC's error). */
export function oauthErrorProblem(error: Error): HttpProblem | undefined {
  if (!(error instanceof OAuthError)) return undefined;
  return new HttpProblem(error.status, error.error, error.message, { headers: error.headers });
}

const E =
  (error: string, status = 400) =>
  (description: string, headers?: Record<string, string>) =>
    new OAuthError(error, description, status, headers);

export const invalidRequest = E('invalid_request');
export const invalidClient = E('invalid_client', 401);
export const invalidGrant = E('invalid_grant');
export const unauthorizedClient = E('unauthorized_client');
export const unsupportedGrantType = E('unsupported_grant_type');
export const unsupportedResponseType = E('unsupported_response_type');
export const invalidScope = E('invalid_scope');
export const invalidTarget = E('invalid_target');
export const accessDenied = E('access_denied', 403);
export const loginRequired = E('login_required');
export const consentRequired = E('consent_required');
export const invalidRedirectUri = E('invalid_redirect_uri');
export const invalidClientMetadata = E('invalid_client_metadata');
export const invalidToken = E('invalid_token', 401);
export const insufficientScope = E('insufficient_scope', 403);
export const slowDown = E('slow_down', 429);

/**
 * One parameter of a form or query: at most once (RFC 6749 section 3.1:
 * parameters MUST NOT be included more than once); empty counts as absent.
 */
export function param(source: unknown, name: string): string | undefined {
  const value = (source as Record<string, unknown> | undefined)?.[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw invalidRequest(`The parameter "${name}" must be given once.`);
  return value;
}

/** RFC 6749 section 3.2: the token, revocation and introspection endpoints take form-encoded bodies. */
export function requireFormBody(contentType: string | undefined): void {
  if (!contentType?.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    throw invalidRequest('The body must be application/x-www-form-urlencoded.');
  }
}
