import { createHash, randomUUID } from 'node:crypto';
import { safeEqual, sha256 } from '../../platform/crypto.ts';
import { formatScope, parseScopeOr, scopesCovered } from '../scopes.ts';
import type { OAuthClient, OAuthDeps } from './clients.ts';
import {
  invalidGrant,
  invalidRequest,
  invalidScope,
  invalidTarget,
  param,
  unauthorizedClient,
  unsupportedGrantType,
} from './errors.ts';
import {
  currentIssuance,
  findRefreshToken,
  openFamily,
  type RefreshTokenRow,
  revokeFamily,
  rotateRefreshToken,
  successorTokens,
  type TokenResponse,
} from './token-families.ts';

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** The refresh token a refresh_token grant presents, with what one read found for it (undefined: unknown). */
export interface PresentedRefreshToken {
  presented: string;
  hash: string;
  token: RefreshTokenRow | undefined;
}

/**
 * Reads the refresh token of a refresh_token grant, with its family and its
 * client's registration, before the client is authenticated: the one read
 * the grant needs (undefined for other grants, or when none was sent).
 */
export async function readPresentedRefreshToken(deps: OAuthDeps, body: unknown): Promise<PresentedRefreshToken | undefined> {
  if (param(body, 'grant_type') !== 'refresh_token') return undefined;
  const presented = param(body, 'refresh_token');
  if (!presented) return undefined;
  const hash = sha256(presented);
  return { presented, hash, token: await findRefreshToken(deps.db, hash) };
}

/**
 * The token endpoint's grants (RFC 6749 sections 4.1.3 and 6, OAuth 2.1), each
 * only for a client that registered it (RFC 7591 section 2, RFC 6749 section
 * 5.2 unauthorized_client). A client without refresh_token gets no refresh
 * token: the one written with the access token is never disclosed, so unusable.
 */
export async function grantTokens(
  deps: OAuthDeps,
  client: OAuthClient,
  body: unknown,
  presented: PresentedRefreshToken | undefined,
): Promise<Omit<TokenResponse, 'refresh_token'> & { refresh_token?: string }> {
  const grantType = param(body, 'grant_type');
  if ((grantType === 'authorization_code' || grantType === 'refresh_token') && !client.grantTypes.includes(grantType)) {
    throw unauthorizedClient(`This client did not register the ${grantType} grant type.`);
  }
  if (grantType === 'authorization_code') {
    const { refresh_token, ...access } = await exchangeCode(deps, client, body);
    return client.grantTypes.includes('refresh_token') ? { ...access, refresh_token } : access;
  }
  if (grantType === 'refresh_token') return refresh(deps, client, body, presented);
  if (!grantType) throw invalidRequest('grant_type is required.');
  throw unsupportedGrantType('Supported grant types: authorization_code, refresh_token.');
}

/** RFC 8707: the token request may name the resource, but only one that was authorized. */
function checkResource(body: unknown, authorized: string | null): void {
  const resource = param(body, 'resource');
  if (resource !== undefined && resource !== authorized) {
    throw invalidTarget('The resource was not part of this authorization.');
  }
}

/**
 * authorization_code: the code is single use, lives 10 minutes, is bound to
 * its client, redirect URI and PKCE challenge. A second use revokes every
 * token issued from the first (RFC 6749 section 4.1.2, RFC 9700 section 4.5).
 */
async function exchangeCode(deps: OAuthDeps, client: OAuthClient, body: unknown): Promise<TokenResponse> {
  const code = param(body, 'code');
  if (!code) throw invalidRequest('code is required.');
  const redirectUri = param(body, 'redirect_uri');
  const verifier = param(body, 'code_verifier');
  const now = deps.clock.now();

  const row = await deps.db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', sha256(code)).executeTakeFirst();
  if (!row || row.client_id !== client.id) throw invalidGrant('The authorization code is invalid.');
  if (row.used_at !== null) {
    if (row.family_id) await revokeFamily(deps, deps.db, row.family_id, 'authorization code reused');
    throw invalidGrant('The authorization code has already been used; tokens issued from it are revoked.');
  }
  if (row.expires_at <= now) throw invalidGrant('The authorization code has expired.');
  if (redirectUri !== row.redirect_uri) throw invalidGrant('redirect_uri does not match the authorization request.');
  if (row.code_challenge !== null) {
    if (!verifier) throw invalidGrant('code_verifier is required (PKCE).');
    if (!VERIFIER.test(verifier)) throw invalidGrant('code_verifier must be 43 to 128 unreserved characters.');
    const computed = createHash('sha256').update(verifier).digest('base64url');
    if (!safeEqual(computed, row.code_challenge)) throw invalidGrant('code_verifier does not match the code challenge.');
  } else if (verifier !== undefined) {
    // RFC 9700 section 4.8.2: a verifier without a challenge is a downgrade attempt.
    throw invalidGrant('code_verifier was sent but the authorization request had no code_challenge.');
  }
  checkResource(body, row.resource);

  const familyId = randomUUID();
  const result = await deps.db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('oauth_codes')
      .set({ used_at: now, family_id: familyId })
      .where('id', '=', row.id)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) return null;
    return openFamily(deps, trx, { familyId, clientId: client.id, userId: row.user_id, scope: row.scope, resource: row.resource });
  });
  if (!result) {
    // A concurrent exchange won; this one is a reuse.
    const used = await deps.db.selectFrom('oauth_codes').select('family_id').where('id', '=', row.id).executeTakeFirst();
    if (used?.family_id) await revokeFamily(deps, deps.db, used.family_id, 'authorization code reused');
    throw invalidGrant('The authorization code has already been used; tokens issued from it are revoked.');
  }
  return result;
}

/**
 * refresh_token: every use rotates the token. Presenting a rotated token
 * again revokes the whole family (RFC 9700 section 4.14.2), except within
 * OAUTH_REFRESH_REUSE_GRACE_SECONDS, where it returns the same successor (for
 * clients that refresh concurrently or retry after a lost response).
 * Scope may be narrowed, never widened beyond the original grant.
 */
async function refresh(deps: OAuthDeps, client: OAuthClient, body: unknown, lookup: PresentedRefreshToken | undefined): Promise<TokenResponse> {
  if (!lookup) throw invalidRequest('refresh_token is required.');
  const { presented, hash, token } = lookup;
  const now = deps.clock.now();
  if (!token || token.client_id !== client.id) throw invalidGrant('The refresh token is invalid.');
  if (token.family_revoked_at !== null) throw invalidGrant('The refresh token has been revoked.');
  if (token.refresh_expires_at <= now) throw invalidGrant('The refresh token has expired.');

  const granted = token.family_scope.split(' ');
  let scope = granted;
  const requested = param(body, 'scope');
  if (requested !== undefined) {
    scope = parseScopeOr(requested, invalidScope);
    if (!scopesCovered(granted, scope)) throw invalidScope('A refresh may narrow the scope, never widen it.');
  }
  checkResource(body, token.resource);

  const successors = successorTokens(token.derive_key, presented);
  if (token.rotated_at === null) {
    const issued = await rotateRefreshToken(deps, hash, { familyId: token.family_id, scope: formatScope(scope), ...successors });
    if (issued) return issued;
  }
  return reuse(deps, hash, token.family_id, successors);
}

/**
 * The claim was lost: the family was revoked meanwhile (refused, nothing more
 * to do), or the token was already rotated: the grace window's same
 * successor, or the family's end.
 */
async function reuse(
  deps: OAuthDeps,
  presentedHash: string,
  familyId: string,
  successors: { access: string; refresh: string },
): Promise<TokenResponse> {
  const now = deps.clock.now();
  const presented = await currentIssuance(deps.db, presentedHash);
  if (!presented || presented.family_revoked_at !== null) throw invalidGrant('The refresh token has been revoked.');
  const rotatedAt = presented.rotated_at;
  if (deps.oauth.refreshGraceMs > 0 && rotatedAt !== null && now - rotatedAt <= deps.oauth.refreshGraceMs) {
    const next = await currentIssuance(deps.db, sha256(successors.refresh));
    if (next && next.rotated_at === null && next.family_revoked_at === null && next.access_expires_at > now) {
      return {
        access_token: successors.access,
        token_type: 'Bearer',
        expires_in: Math.max(0, Math.floor((next.access_expires_at - now) / 1000)),
        refresh_token: successors.refresh,
        scope: next.scope,
      };
    }
  }
  await revokeFamily(deps, deps.db, familyId, 'refresh token reused');
  throw invalidGrant('The refresh token has already been used; every token of this authorization is revoked.');
}
