import { createHmac, createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { randomToken, sha256 } from '../../platform/crypto.ts';
import { ACCESS_TOKEN_PREFIX } from '../bearer.ts';
import type { AuthTables } from '../schema.ts';
import type { OAuthDeps } from './clients.ts';

/**
 * Access and refresh tokens, grouped in families (table `oauth_families`):
 * one family per authorization (code exchange); every refresh token rotated
 * from it and every access token issued along the way belongs to it, so a
 * replayed code or refresh token can revoke them all at once.
 */
export const REFRESH_TOKEN_PREFIX = 'ort_';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

type Db = Kysely<AuthTables>;

/**
 * The tokens that succeed a refresh token, derived from it under the family's
 * key: presenting the same refresh token again yields the same successors, so
 * the reuse grace window can hand back "the same successor" without ever
 * storing a plaintext token. The key alone is useless without a refresh token,
 * which is never stored.
 */
export function successorTokens(deriveKey: string, presented: string): { access: string; refresh: string } {
  const key = createSecretKey(Buffer.from(deriveKey, 'base64url'));
  const derive = (label: string) => createHmac('sha256', key).update(`${label}:${presented}`).digest('base64url');
  return { access: ACCESS_TOKEN_PREFIX + derive('access'), refresh: REFRESH_TOKEN_PREFIX + derive('refresh') };
}

interface Issue {
  familyId: string;
  clientId: string;
  userId: string;
  scope: string;
  resource: string | null;
  access: string;
  refresh: string;
}

/** Writes an access and a refresh token of a family and extends the family's life to the refresh token's. */
export async function writeTokens(deps: OAuthDeps, trx: Db, issue: Issue): Promise<TokenResponse> {
  const now = deps.clock.now();
  const base = {
    family_id: issue.familyId,
    client_id: issue.clientId,
    user_id: issue.userId,
    scope: issue.scope,
    resource: issue.resource,
    created_at: now,
    rotated_at: null,
    revoked_at: null,
  };
  const refreshExpires = now + deps.oauth.refreshTtlMs;
  await trx
    .insertInto('oauth_access_tokens')
    .values({ ...base, id: randomUUID(), token_hash: sha256(issue.access), expires_at: now + deps.oauth.accessTtlMs })
    .execute();
  await trx
    .insertInto('oauth_refresh_tokens')
    .values({ ...base, id: randomUUID(), token_hash: sha256(issue.refresh), expires_at: refreshExpires })
    .execute();
  await trx.updateTable('oauth_families').set({ expires_at: refreshExpires }).where('id', '=', issue.familyId).execute();
  if (issue.clientId.startsWith('svc_')) {
    await trx.updateTable('oauth_clients').set({ last_token_at: now }).where('client_id', '=', issue.clientId).execute();
  }
  return {
    access_token: issue.access,
    token_type: 'Bearer',
    expires_in: Math.floor(deps.oauth.accessTtlMs / 1000),
    refresh_token: issue.refresh,
    scope: issue.scope,
  };
}

/** Opens a family for a freshly exchanged code and issues its first tokens (random, not derived). */
export async function openFamily(
  deps: OAuthDeps,
  trx: Db,
  grant: { clientId: string; userId: string; scope: string; resource: string | null },
): Promise<{ familyId: string; tokens: TokenResponse }> {
  const familyId = randomUUID();
  const now = deps.clock.now();
  await trx
    .insertInto('oauth_families')
    .values({
      id: familyId,
      user_id: grant.userId,
      client_id: grant.clientId,
      scope: grant.scope,
      resource: grant.resource,
      derive_key: randomBytes(32).toString('base64url'),
      created_at: now,
      expires_at: now + deps.oauth.refreshTtlMs,
      revoked_at: null,
    })
    .execute();
  const tokens = await writeTokens(deps, trx, {
    familyId,
    ...grant,
    access: randomToken(ACCESS_TOKEN_PREFIX),
    refresh: randomToken(REFRESH_TOKEN_PREFIX),
  });
  return { familyId, tokens };
}

/** Revokes a family and every token in it (kept, not deleted, so later reuse is still recognised). */
export async function revokeFamily(deps: Pick<OAuthDeps, 'clock' | 'log'>, db: Db, familyId: string, reason: string): Promise<void> {
  const now = deps.clock.now();
  await db.updateTable('oauth_families').set({ revoked_at: now }).where('id', '=', familyId).where('revoked_at', 'is', null).execute();
  for (const table of ['oauth_access_tokens', 'oauth_refresh_tokens'] as const) {
    await db.updateTable(table).set({ revoked_at: now }).where('family_id', '=', familyId).where('revoked_at', 'is', null).execute();
  }
  deps.log.warn({ familyId, reason }, 'token family revoked');
}

