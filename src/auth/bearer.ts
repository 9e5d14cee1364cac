import type { Kysely } from 'kysely';
import { sha256 } from '../platform/crypto.ts';
import { precompiled } from '../platform/db.ts';
import type { AuthDeps } from './deps.ts';
import type { AuthTables } from './schema.ts';
import { PAT_PREFIX } from './tokens.ts';

/** Prefix of OAuth access tokens (`oat_` + 32 random bytes, base64url). */
export const ACCESS_TOKEN_PREFIX = 'oat_';
/** last_used_at of a personal access token or a session is written at most this often, to keep writes off the hot path. */
export const LAST_USED_RESOLUTION = 60_000;

// Parameters: token hash, now. Precompiled: this is the hot path of every resource server's introspection.
// Revocation is read from the family (one primary-key lookup more): a token of a revoked family is inactive,
// whenever and however it was issued.
const accessTokenQuery = precompiled((db: Kysely<AuthTables>) =>
  db
    .selectFrom('oauth_tokens as t')
    .innerJoin('oauth_families as f', 'f.id', 't.family_id')
    .innerJoin('users as u', 'u.id', 'f.user_id')
    .select(['f.user_id', 't.scope', 'f.client_id', 'f.resource', 't.created_at', 't.access_expires_at as expires_at', 'u.email', 'u.email_verified_at'])
    .where('t.access_hash', '=', '')
    .where('t.access_expires_at', '>', 0)
    .where('f.revoked_at', 'is', null),
);

// Parameters: token hash, now.
const personalTokenQuery = precompiled((db: Kysely<AuthTables>) =>
  db
    .selectFrom('personal_access_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.id', 't.user_id', 't.scope', 't.created_at', 't.expires_at', 't.last_used_at', 'u.email', 'u.email_verified_at'])
    .where('t.token_hash', '=', '')
    .where('t.revoked_at', 'is', null)
    .where('t.expires_at', '>', 0),
);

/** What a valid bearer token grants: the same shape for OAuth access tokens and personal access tokens. */
export interface BearerGrant {
  kind: 'access_token' | 'personal_access_token';
  userId: string;
  email: string;
  emailVerified: boolean;
  scope: string;
  clientId: string | null;
  resource: string | null;
  issuedAt: number;
  expiresAt: number;
}

/**
 * The one validation path for bearer tokens (userinfo, introspection, and the
 * products' resource servers through introspection): an OAuth access token
 * or a personal access token, looked up by its SHA-256; null when unknown,
 * expired or revoked.
 */
export async function resolveBearer(deps: Pick<AuthDeps, 'db' | 'clock'>, token: string): Promise<BearerGrant | null> {
  const now = deps.clock.now();
  const hash = sha256(token);
  if (token.startsWith(ACCESS_TOKEN_PREFIX)) {
    const row = await accessTokenQuery(deps.db, [hash, now]);
    return row ? toGrant('access_token', row, row.client_id, row.resource) : null;
  }
  if (token.startsWith(PAT_PREFIX)) {
    const row = await personalTokenQuery(deps.db, [hash, now]);
    if (!row) return null;
    if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION) {
      await deps.db.updateTable('personal_access_tokens').set({ last_used_at: now }).where('id', '=', row.id).execute();
    }
    return toGrant('personal_access_token', row, null, null);
  }
  return null;
}

function toGrant(
  kind: BearerGrant['kind'],
  row: { user_id: string; email: string; email_verified_at: number | null; scope: string; created_at: number; expires_at: number },
  clientId: string | null,
  resource: string | null,
): BearerGrant {
  return {
    kind,
    userId: row.user_id,
    email: row.email,
    emailVerified: row.email_verified_at !== null,
    scope: row.scope,
    clientId,
    resource,
    issuedAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
