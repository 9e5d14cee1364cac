import { randomUUID } from 'node:crypto';
import { parseScopeOr, scopesCovered } from '../scopes.ts';
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

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Bounds of what a pending request stores (defect: a 15 KB state was kept).
 * RFC 6749 sets no limit on state; clients use a random value or a short
 * JSON blob, so 1024 characters is generous. A resource indicator is a URI
 * naming one of the products' APIs.
 */
export const STATE_MAX = 1024;
export const RESOURCE_MAX = 1024;
const SCOPE_MAX = 1000;

/** `prompt` values (OpenID Connect Core section 3.1.2.1; `select_account` is handled as `login`: one session at a time). */
export type Prompt = 'none' | 'login' | 'consent' | 'select_account';
const PROMPTS: ReadonlySet<string> = new Set<Prompt>(['none', 'login', 'consent', 'select_account']);

/** An error shown on our own page: the redirect URI is not trusted (yet), so we never redirect. */
export class AuthorizePageError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(message: string, status = 400, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

/** Where to send an error once the redirect URI is trusted (RFC 6749 section 4.1.2.1, with iss: RFC 9207). */
export class AuthorizeRedirectError extends Error {
  readonly url: string;
  constructor(url: string) {
    super('authorization error redirect');
    this.url = url;
  }
}

/** An authorization request that passed every check, kept server-side while the user signs in and consents. */
export interface PendingRequest {
  id: string;
  clientId: string;
  redirectUri: string;
  state: string | undefined;
  scope: string[];
  resource: string | null;
  codeChallenge: string | null;
  prompt: Prompt[];
  /** Set once the user signed in during this request (prompt=login is then satisfied). */
  authenticated?: boolean;
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
 * May an error be sent to this client's redirect URI? RFC 9700 section
 * 4.11.2: anyone can register a redirect URI (dynamic registration, a
 * metadata document), so an error redirected at once, without sign-in, makes
 * the service an open redirector. The static client's redirect URIs are the
 * operator's and always trusted; the others only once the user has signed in.
 */
export function redirectTrusted(client: Pick<OAuthClient, 'kind'>, signedIn: boolean): boolean {
  return client.kind === 'static' || signedIn;
}

/** The error, as a redirect to the client when that is trusted, else on our own page. */
export function refuse(
  deps: OAuthDeps,
  target: { redirectUri: string; state: string | undefined; trusted: boolean },
  err: OAuthError,
): never {
  if (!target.trusted) throw new AuthorizePageError(err.message);
  // A state over the bound is not echoed (it is why the request failed, or would make the URL huge).
  const state = target.state !== undefined && target.state.length <= STATE_MAX ? target.state : undefined;
  throw new AuthorizeRedirectError(errorRedirect(deps, target.redirectUri, state, err));
}

/**
 * The authorization endpoint's checks, in order:
 * 1. parameters given at most once, client_id present;
 * 2. the client exists (a metadata-URL client's document can be fetched);
 * 3. redirect_uri present and registered for it;
 * until here failures show our error page (never a redirect, RFC 6749 section 4.1.2.1);
 * from here on they are redirected to the client when {@link redirectTrusted}, else shown too:
 * 4. response_type=code;
 * 5. state within its bound;
 * 6. PKCE: S256 with a well-formed challenge; required for public clients;
 * 7. scope known and within what the client registered;
 * 8. resource an absolute URI without fragment (RFC 8707), within its bound;
 * 9. prompt a known list, `none` alone.
 */
export async function checkAuthorizationRequest(
  deps: OAuthDeps,
  query: unknown,
  context: { signedIn: boolean },
): Promise<{ client: OAuthClient; request: PendingRequest }> {
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
    // A metadata document that cannot be had: one generic message; a busy fetcher keeps its 429/503 and Retry-After.
    if (err instanceof OAuthError) throw new AuthorizePageError(err.message, err.status >= 429 ? err.status : 400, err.headers);
    throw err;
  }
  if (!client) throw new AuthorizePageError('The application is not registered with this service.');
  if (!redirectUri) throw new AuthorizePageError('The request has no redirect_uri.');
  if (!redirectUriMatches(client.redirectUris, redirectUri, client.applicationType)) {
    throw new AuthorizePageError('The redirect_uri is not registered for this application.');
  }

  const target = { redirectUri, state, trusted: redirectTrusted(client, context.signedIn) };
  try {
    if (param(query, 'response_type') !== 'code') throw unsupportedResponseType('Only response_type=code is supported.');
    if (state !== undefined && state.length > STATE_MAX) throw invalidRequest(`state must be at most ${STATE_MAX} characters.`);
    const codeChallenge = checkPkce(query, client);
    const rawScope = param(query, 'scope');
    if (rawScope !== undefined && rawScope.length > SCOPE_MAX) throw invalidScope(`scope must be at most ${SCOPE_MAX} characters.`);
    const scope = parseScopeOr(rawScope, invalidScope);
    if (client.allowedScopes && !scopesCovered(client.allowedScopes, scope)) {
      throw invalidScope('The application did not register for all of these scopes.');
    }
    const resource = param(query, 'resource') ?? null;
    if (resource !== null) checkResourceIndicator(resource);
    const prompt = parsePrompt(param(query, 'prompt'));
    const request: PendingRequest = { id: randomUUID(), clientId: client.id, redirectUri, state, scope, resource, codeChallenge, prompt };
    return { client, request };
  } catch (err) {
    if (err instanceof OAuthError) refuse(deps, target, err);
    throw err;
  }
}

/** RFC 7636 with OAuth 2.1: S256 only; public clients must use it; the challenge is a base64url SHA-256. */
function checkPkce(query: unknown, client: OAuthClient): string | null {
  const challenge = param(query, 'code_challenge');
  const method = param(query, 'code_challenge_method');
  if (challenge !== undefined) {
    if (method !== 'S256') throw invalidRequest('code_challenge_method must be S256 (plain is not accepted).');
    if (!CHALLENGE.test(challenge)) throw invalidRequest('code_challenge must be a base64url SHA-256 (43 characters).');
    return challenge;
  }
  if (!client.confidential) throw invalidRequest('PKCE is required: send code_challenge with code_challenge_method=S256.');
  if (method !== undefined) throw invalidRequest('code_challenge_method without code_challenge.');
  return null;
}

/** RFC 8707 section 2: an absolute URI without a fragment. */
function checkResourceIndicator(resource: string): void {
  if (resource.length > RESOURCE_MAX) throw invalidTarget(`resource must be at most ${RESOURCE_MAX} characters.`);
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    throw invalidTarget('resource must be an absolute URI.');
  }
  if (url.hash !== '' || resource.includes('#')) throw invalidTarget('resource must not contain a fragment.');
}

/** A space-delimited list of known values; `none` must stand alone (OpenID Connect Core section 3.1.2.1). */
export function parsePrompt(raw: string | undefined): Prompt[] {
  const values = [...new Set((raw ?? '').split(' ').filter((v) => v !== ''))];
  for (const v of values) {
    if (!PROMPTS.has(v)) throw invalidRequest('prompt may list only none, login, consent and select_account.');
  }
  if (values.includes('none') && values.length > 1) throw invalidRequest('prompt=none cannot be combined with other values.');
  return values as Prompt[];
}
