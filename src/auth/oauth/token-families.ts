import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { randomToken, sha256 } from '../../platform/crypto.ts';
import { type AnyDb, precompiled } from '../../platform/db.ts';
import { preparedStatement } from '../../platform/prepared-statement.ts';
import { runTransaction, step } from '../../platform/prepared-transaction.ts';
import { ACCESS_TOKEN_PREFIX } from '../bearer.ts';
import type { AuthTables } from '../schema.ts';
import { type OAuthClient, type OAuthDeps, registeredClient } from './clients.ts';

/**
 * Access and refresh tokens, grouped in families (table `oauth_families`):
 * one family per authorization (code exchange); every refresh token rotated
 * from it and every access token issued along the way belongs to it, so a
 * replayed code or refresh token can revoke them all at once.
 *
 * Each issuance (the code exchange, then every refresh) is one row of
 * `oauth_tokens` holding the access and the refresh token's hashes. The
 * family row is the single source of truth for revocation: every lookup
 * joins it, so revoking is one conditional update, atomic by itself, and no
 * token issued by a refresh that raced the revocation can outlive it.
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
  // A KeyObject, not the Buffer itself: given a Buffer, createHmac tells it from a KeyObject by a failed
  // check that throws inside Node, ten times slower (measured 59 against 6 µs for the two).
  const key = createSecretKey(Buffer.from(deriveKey, 'base64url'));
  const derive = (label: string) => createHmac('sha256', key).update(`${label}:${presented}`).digest('base64url');
  return { access: ACCESS_TOKEN_PREFIX + derive('access'), refresh: REFRESH_TOKEN_PREFIX + derive('refresh') };
}

/** A refresh token with its family, and its client's registration, as the refresh grant checks them. */
export interface RefreshTokenRow {
  family_id: string;
  client_id: string;
  user_id: string;
  family_scope: string;
  resource: string | null;
  derive_key: string;
  family_revoked_at: number | null;
  refresh_expires_at: number;
  rotated_at: number | null;
  /** The family's client when it is a registered (dynamic) one; null for the static and metadata-URL clients, which have no row. */
  registered: OAuthClient | null;
}

// Parameter: refresh token hash. On SQLite it reads the last committed state: the claim below decides.
// The client's row is joined (none for the static and metadata-URL clients): one read authenticates
// a registered client and finds its token, where findClient then findRefreshToken took two.
const refreshTokenQuery = precompiled((db: Kysely<AuthTables>) =>
  db
    .selectFrom('oauth_tokens as t')
    .innerJoin('oauth_families as f', 'f.id', 't.family_id')
    .leftJoin('oauth_clients as c', 'c.client_id', 'f.client_id')
    .select(['t.family_id', 'f.client_id', 'f.user_id', 'f.scope as family_scope', 'f.resource', 'f.derive_key'])
    .select(['f.revoked_at as family_revoked_at', 't.refresh_expires_at', 't.rotated_at'])
    .select(['c.client_id as registered_id', 'c.client_name', 'c.client_uri', 'c.redirect_uris', 'c.application_type'])
    .select(['c.scope as client_scope', 'c.grant_types'])
    .where('t.refresh_hash', '=', ''),
);

export async function findRefreshToken(db: Db, refreshHash: string): Promise<RefreshTokenRow | undefined> {
  const row = await refreshTokenQuery(db, [refreshHash]);
  if (!row) return undefined;
  // One object, field by field: a rest pattern and a spread copied the row twice on every refresh.
  return {
    family_id: row.family_id,
    client_id: row.client_id,
    user_id: row.user_id,
    family_scope: row.family_scope,
    resource: row.resource,
    derive_key: row.derive_key,
    family_revoked_at: row.family_revoked_at,
    refresh_expires_at: row.refresh_expires_at,
    rotated_at: row.rotated_at,
    registered:
      row.registered_id === null
        ? null
        : registeredClient({
            client_id: row.registered_id,
            client_name: row.client_name,
            client_uri: row.client_uri,
            redirect_uris: row.redirect_uris as string,
            application_type: row.application_type as string,
            scope: row.client_scope,
            grant_types: row.grant_types as string,
          }),
  };
}

interface Issue {
  familyId: string;
  scope: string;
  access: string;
  refresh: string;
}

// The two statements of every rotation, compiled once per dialect (see preparedStatement).
const insertTokens = preparedStatement(['refresh', 'access', 'family', 'scope', 'now', 'accessExpires', 'refreshExpires'], (db: AnyDb, p) =>
  (db as Db).insertInto('oauth_tokens').values({
    refresh_hash: p.refresh,
    access_hash: p.access,
    family_id: p.family,
    scope: p.scope,
    created_at: p.now,
    access_expires_at: p.accessExpires,
    refresh_expires_at: p.refreshExpires,
    rotated_at: null,
  }),
);
const claimRefreshToken = preparedStatement(['hash', 'family', 'now'], (db: AnyDb, p) =>
  (db as Db)
    .updateTable('oauth_tokens')
    .set({ rotated_at: p.now })
    .where('refresh_hash', '=', p.hash)
    .where('rotated_at', 'is', null)
    .where((eb) => eb.exists(eb.selectFrom('oauth_families as f').select('f.id').where('f.id', '=', p.family).where('f.revoked_at', 'is', null))),
);

/** The values of insertTokens for one issuance: an access and a refresh token of a family, in one row. */
function tokenRow(deps: OAuthDeps, issue: Issue, now: number) {
  return {
    refresh: sha256(issue.refresh),
    access: sha256(issue.access),
    family: issue.familyId,
    scope: issue.scope,
    now,
    accessExpires: now + deps.oauth.accessTtlMs,
    refreshExpires: now + deps.oauth.refreshTtlMs,
  };
}

/** What the client receives for an issuance. */
function tokenResponse(deps: OAuthDeps, issue: Issue): TokenResponse {
  return {
    access_token: issue.access,
    token_type: 'Bearer',
    expires_in: Math.floor(deps.oauth.accessTtlMs / 1000),
    refresh_token: issue.refresh,
    scope: issue.scope,
  };
}

/** Opens a family for a freshly claimed code and issues its first tokens (random, not derived). */
export async function openFamily(
  deps: OAuthDeps,
  trx: Db,
  grant: { familyId: string; clientId: string; userId: string; scope: string; resource: string | null },
): Promise<TokenResponse> {
  const now = deps.clock.now();
  await trx
    .insertInto('oauth_families')
    .values({
      id: grant.familyId,
      user_id: grant.userId,
      client_id: grant.clientId,
      scope: grant.scope,
      resource: grant.resource,
      derive_key: randomBytes(32).toString('base64url'),
      created_at: now,
      revoked_at: null,
    })
    .execute();
  // For the purge of registrations that never obtained a token; written at code exchanges, never at refreshes.
  // The static and metadata-URL clients have no row: the update matches nothing.
  await trx.updateTable('oauth_clients').set({ last_token_at: now }).where('client_id', '=', grant.clientId).execute();
  const issue = { familyId: grant.familyId, scope: grant.scope, access: randomToken(ACCESS_TOKEN_PREFIX), refresh: randomToken(REFRESH_TOKEN_PREFIX) };
  await insertTokens.execute(trx, tokenRow(deps, issue, now));
  return tokenResponse(deps, issue);
}

/**
 * Rotates a refresh token: one transaction that marks the presented token
 * rotated, only if it was not yet and its family is live (checked by the
 * claiming statement itself, not by the earlier read), and writes the
 * successors. Null when the claim lost: the token was rotated meanwhile or
 * its family revoked. Two prepared statements, the same SQL on both
 * databases; on SQLite the transaction runs at once on the write connection
 * (see runTransaction).
 */
export async function rotateRefreshToken(
  deps: OAuthDeps,
  presentedHash: string,
  issue: Issue,
): Promise<TokenResponse | null> {
  const now = deps.clock.now();
  const committed = await runTransaction(deps.db, [
    step(claimRefreshToken, { hash: presentedHash, family: issue.familyId, now }, 1),
    step(insertTokens, tokenRow(deps, issue, now)),
  ]);
  return committed ? tokenResponse(deps, issue) : null;
}

/** Revokes a family, and so every token in it: one conditional write. Rows are kept, so later reuse is still recognised. */
export async function revokeFamily(deps: Pick<OAuthDeps, 'clock' | 'log'>, db: Db, familyId: string, reason: string): Promise<void> {
  await db.updateTable('oauth_families').set({ revoked_at: deps.clock.now() }).where('id', '=', familyId).where('revoked_at', 'is', null).execute();
  deps.log.warn({ familyId, reason }, 'token family revoked');
}

/**
 * Revokes every OAuth token family of a user (a password reset, an account
 * taken back): one statement, so it commits with the caller's transaction
 * when `db` is one. Returns how many families it revoked.
 */
export async function revokeUserFamilies(db: Db, userId: string, now: number): Promise<number> {
  const res = await db
    .updateTable('oauth_families')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Which family and client a token belongs to, whether it is a refresh or an access token; undefined when unknown. */
export async function findTokenOwner(
  db: Db,
  tokenHash: string,
): Promise<{ kind: 'refresh_token' | 'access_token'; familyId: string; clientId: string } | undefined> {
  const row = await db
    .selectFrom('oauth_tokens as t')
    .innerJoin('oauth_families as f', 'f.id', 't.family_id')
    .select(['t.refresh_hash', 't.family_id', 'f.client_id'])
    .where((eb) => eb.or([eb('t.refresh_hash', '=', tokenHash), eb('t.access_hash', '=', tokenHash)]))
    .executeTakeFirst();
  if (!row) return undefined;
  return { kind: row.refresh_hash === tokenHash ? 'refresh_token' : 'access_token', familyId: row.family_id, clientId: row.client_id };
}

/** RFC 7009 for an access token: it alone ends now (its row keeps the refresh token and the family alive). */
export async function revokeAccessToken(db: Db, accessHash: string, now: number): Promise<void> {
  await db.updateTable('oauth_tokens').set({ access_expires_at: now }).where('access_hash', '=', accessHash).where('access_expires_at', '>', now).execute();
}

/** An issuance as it stands now (read through the writer, never a stale snapshot): for the reuse decision after a lost claim. */
export async function currentIssuance(db: Db, refreshHash: string) {
  return db
    .selectFrom('oauth_tokens as t')
    .innerJoin('oauth_families as f', 'f.id', 't.family_id')
    .select(['t.scope', 't.rotated_at', 't.access_hash', 't.access_expires_at', 'f.revoked_at as family_revoked_at'])
    .where('t.refresh_hash', '=', refreshHash)
    .executeTakeFirst();
}
