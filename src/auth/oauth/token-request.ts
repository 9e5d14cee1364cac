import { sha256 } from '../../platform/crypto.ts';
import { authenticateClient, type ClientCredentials, checkClientSecret } from './client-auth.ts';
import { isMetadataClientId } from './client-metadata.ts';
import type { OAuthClient, OAuthDeps } from './clients.ts';
import { invalidGrant, invalidRequest, param, unsupportedGrantType } from './errors.ts';
import { grantTokens, type PresentedRefreshToken, readPresentedRefreshToken } from './grants.ts';

/**
 * A token request (RFC 6749 section 3.2), once its credentials are read:
 * 1. a refresh_token grant's token is read, with its family and its client's
 *    registration, in one lookup;
 * 2. for a metadata-URL client_id, the grant is checked before its document
 *    is fetched (defect 5);
 * 3. the client is authenticated: from the row read in 1 when the token is
 *    this registered client's, else looked up (the same checks either way);
 * 4. the grant runs, with the token read in 1.
 */
export async function tokenRequest(deps: OAuthDeps, credentials: ClientCredentials, body: unknown, ip: string) {
  const refresh = await readPresentedRefreshToken(deps, body);
  if (isMetadataClientId(credentials.id)) await checkGrantBeforeClientFetch(deps, credentials.id, body, refresh);
  const client = await tokenClient(deps, credentials, refresh, ip);
  return grantTokens(deps, client, body, refresh);
}

/**
 * The authenticated client. When the presented refresh token is this
 * registered client's, its row came with the token; a token that is unknown
 * or another client's proves nothing about this client_id, which is then
 * looked up like any other (an unknown client stays invalid_client).
 */
async function tokenClient(
  deps: OAuthDeps,
  credentials: ClientCredentials,
  refresh: PresentedRefreshToken | undefined,
  ip: string,
): Promise<OAuthClient> {
  const registered = refresh?.token?.registered;
  if (registered && registered.id === credentials.id) return checkClientSecret(deps, registered, credentials);
  return authenticateClient(deps, credentials, { ip });
}

/**
 * Defect 5: what the token endpoint can refuse before a metadata-URL client's
 * document is fetched. The code or refresh token must exist and belong to
 * this client_id, and the grant type must be one we serve; so an unknown or
 * foreign code or token costs a database read, never an outbound fetch.
 * Everything else (the document, then the grant's own checks) follows.
 */
async function checkGrantBeforeClientFetch(
  deps: OAuthDeps,
  clientId: string,
  body: unknown,
  refresh: PresentedRefreshToken | undefined,
): Promise<void> {
  const grantType = param(body, 'grant_type');
  if (grantType === 'authorization_code') {
    const code = param(body, 'code');
    if (!code) throw invalidRequest('code is required.');
    const row = await deps.db.selectFrom('oauth_codes').select('client_id').where('code_hash', '=', sha256(code)).executeTakeFirst();
    if (row?.client_id !== clientId) throw invalidGrant('The authorization code is invalid.');
  } else if (grantType === 'refresh_token') {
    if (!refresh) throw invalidRequest('refresh_token is required.');
    if (refresh.token?.client_id !== clientId) throw invalidGrant('The refresh token is invalid.');
  } else if (!grantType) {
    throw invalidRequest('grant_type is required.');
  } else {
    throw unsupportedGrantType('Supported grant types: authorization_code, refresh_token.');
  }
}
