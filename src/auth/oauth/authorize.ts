import { randomUUID } from 'node:crypto';
import { randomToken, sha256 } from '../../platform/crypto.ts';
import { formatScope, parseScope, parseScopeOr, scopesCovered } from '../scopes.ts';
import { findClient, type OAuthClient, type OAuthDeps } from './clients.ts';
import {
  invalidRequest,
  invalidScope,
  invalidTarget,
  OAuthError,
  param,
  unsupportedResponseType,
} from './errors.ts';
import { redirectUriMatches } from './redirect-uris.ts';

export const CODE_PREFIX = 'oac_';
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** An error shown on our own page: the redirect URI is not trusted (yet), so we never redirect. */
export class AuthorizePageError extends Error {}

/** An authorization request that passed every check, kept server-side while the user signs in and consents. */
export interface PendingRequest {
  id: string;
  clientId: string;
  redirectUri: string;
  state: string | undefined;
  scope: string[];
  resource: string | null;
  codeChallenge: string | null;
  prompt: string | undefined;
  /** Set once the user signed in during this request (prompt=login is then satisfied). */
  authenticated?: boolean;
}

/** Where to send an error once the redirect URI is trusted (RFC 6749 section 4.1.2.1, with iss: RFC 9207). */
export class AuthorizeRedirectError extends Error {
  readonly url: string;
  constructor(url: string) {
    super('authorization error redirect');
    this.url = url;
  }
}

export function redirectWith(base: string, params: Record<string, string | undefined>): string {
  const url = new URL(base);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.append(k, v);
  return url.toString();
}

export function errorRedirect(deps: OAuthDeps, redirectUri: string, state: string | undefined, err: OAuthError): string {
  return redirectWith(redirectUri, { error: err.error, error_description: err.message, state, iss: deps.issuer });
}

/**
 * The authorization endpoint's checks, in order. Until client and redirect
 * URI are established, failures are AuthorizePageError (never a redirect:
 * RFC 6749 section 4.1.2.1, no open redirector); afterwards they are
 * AuthorizeRedirectError carrying the error redirect.
 */
export async function checkAuthorizationRequest(deps: OAuthDeps, query: unknown): Promise<{ client: OAuthClient; request: PendingRequest }> {
  let clientId: string | undefined;
  let redirectUri: string | undefined;
  let state: string | undefined;
  try {
    clientId = param(query, 'client_id');
    redirectUri = param(query, 'redirect_uri');
    state = param(query, 'state');
  } catch (err) {
    throw new AuthorizePageError((err as Error).message);
  }
  if (!clientId) throw new AuthorizePageError('The request names no client (client_id is missing).');
  let client: OAuthClient | null;
  try {
    client = await findClient(deps, clientId);
  } catch (err) {
    if (err instanceof OAuthError) throw new AuthorizePageError(err.message);
    throw err;
  }
  if (!client) throw new AuthorizePageError('The application is not registered with this service.');
  if (!redirectUri) throw new AuthorizePageError('The request has no redirect_uri.');
  if (!redirectUriMatches(client.redirectUris, redirectUri, client.applicationType)) {
    throw new AuthorizePageError('The redirect_uri is not registered for this application.');
  }

  try {
    const responseType = param(query, 'response_type');
    if (responseType !== 'code') throw unsupportedResponseType('Only response_type=code is supported.');
    const challenge = param(query, 'code_challenge');
    const method = param(query, 'code_challenge_method');
    if (challenge !== undefined) {
      if (method !== 'S256') throw invalidRequest('code_challenge_method must be S256 (plain is not accepted).');
      if (!CHALLENGE.test(challenge)) throw invalidRequest('code_challenge must be a base64url SHA-256 (43 characters).');
    } else if (!client.confidential) {
      throw invalidRequest('PKCE is required: send code_challenge with code_challenge_method=S256.');
    } else if (method !== undefined) {
      throw invalidRequest('code_challenge_method without code_challenge.');
    }
    const scope = parseScopeOr(param(query, 'scope'), invalidScope);
    if (client.allowedScopes && !scopesCovered(client.allowedScopes, scope)) {
      throw invalidScope('The application did not register for all of these scopes.');
    }
    const resource = param(query, 'resource') ?? null;
    if (resource !== null) checkResourceIndicator(resource);
    const request: PendingRequest = {
      id: randomUUID(),
      clientId: client.id,
      redirectUri,
      state,
      scope,
      resource,
      codeChallenge: challenge ?? null,
      prompt: param(query, 'prompt'),
    };
    return { client, request };
  } catch (err) {
    if (err instanceof OAuthError) throw new AuthorizeRedirectError(errorRedirect(deps, redirectUri, state, err));
    throw err;
  }
}

/** RFC 8707 section 2: an absolute URI without a fragment. */
function checkResourceIndicator(resource: string): void {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    throw invalidTarget('resource must be an absolute URI.');
  }
  if (url.hash !== '' || resource.includes('#')) throw invalidTarget('resource must not contain a fragment.');
}

export async function savePendingRequest(deps: OAuthDeps, request: PendingRequest): Promise<void> {
  const now = deps.clock.now();
  await deps.db
    .insertInto('oauth_requests')
    .values({
      id: request.id,
      client_id: request.clientId,
      params: JSON.stringify(request),
      created_at: now,
      expires_at: now + deps.oauth.codeTtlMs,
    })
    .execute();
}

export async function loadPendingRequest(deps: OAuthDeps, id: string | undefined): Promise<PendingRequest | null> {
  if (!id || id.length > 64) return null;
  const row = await deps.db
    .selectFrom('oauth_requests')
    .select('params')
    .where('id', '=', id)
    .where('expires_at', '>', deps.clock.now())
    .executeTakeFirst();
  return row ? (JSON.parse(row.params) as PendingRequest) : null;
}

export async function markAuthenticated(deps: OAuthDeps, request: PendingRequest): Promise<void> {
  request.authenticated = true;
  await deps.db.updateTable('oauth_requests').set({ params: JSON.stringify(request) }).where('id', '=', request.id).execute();
}

/** The scopes the user has granted this client so far (empty: none). */
async function grantedScopes(deps: OAuthDeps, userId: string, clientId: string): Promise<string[]> {
  const row = await deps.db
    .selectFrom('oauth_consents')
    .select('scope')
    .where('user_id', '=', userId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row ? row.scope.split(' ') : [];
}

/** Has the user already granted this client every scope asked for? */
export async function consentCovers(deps: OAuthDeps, userId: string, request: PendingRequest): Promise<boolean> {
  return scopesCovered(await grantedScopes(deps, userId, request.clientId), request.scope);
}

/** Remembers consent: the union of what was granted before and now. */
export async function rememberConsent(deps: OAuthDeps, userId: string, request: PendingRequest): Promise<void> {
  const now = deps.clock.now();
  const before = await grantedScopes(deps, userId, request.clientId);
  const scope = formatScope(parseScope([...before, ...request.scope].join(' ')));
  await deps.db
    .insertInto('oauth_consents')
    .values({ user_id: userId, client_id: request.clientId, scope, created_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['user_id', 'client_id']).doUpdateSet({ scope, updated_at: now }))
    .execute();
}

/** Issues the code (single use, 10 minutes), ends the pending request and returns the client redirect. */
export async function issueCode(deps: OAuthDeps, userId: string, request: PendingRequest): Promise<string> {
  const code = randomToken(CODE_PREFIX);
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const removed = await trx.deleteFrom('oauth_requests').where('id', '=', request.id).executeTakeFirst();
    if (Number(removed.numDeletedRows) !== 1) throw new AuthorizePageError('This sign-in request was already completed.');
    await trx
      .insertInto('oauth_codes')
      .values({
        id: randomUUID(),
        code_hash: sha256(code),
        client_id: request.clientId,
        user_id: userId,
        redirect_uri: request.redirectUri,
        scope: formatScope(request.scope),
        resource: request.resource,
        code_challenge: request.codeChallenge,
        created_at: now,
        expires_at: now + deps.oauth.codeTtlMs,
        used_at: null,
        family_id: null,
      })
      .execute();
  });
  return redirectWith(request.redirectUri, { code, state: request.state, iss: deps.issuer });
}
