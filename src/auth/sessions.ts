import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../platform/clock.ts';
import { randomToken, sha256 } from '../platform/crypto.ts';
import { precompiled } from '../platform/db.ts';
import type { AuthDeps } from './deps.ts';
import { type AuthTables, toUser, type User } from './schema.ts';

/**
 * Sessions. Table `sessions`: id, user_id, token_hash (SHA-256 of the token,
 * unique), created_at, expires_at, revoked_at, ip, user_agent.
 * The token is `ses_` + 32 random bytes (base64url), shown once at login;
 * lookups go by its hash, so a database leak reveals no usable token and no
 * secret is ever compared byte by byte.
 */
export const SESSION_PREFIX = 'ses_';

export async function createSession(
  db: Kysely<AuthTables>,
  clock: Clock,
  ttlMs: number,
  userId: string,
  ip: string,
  userAgent: string | undefined,
): Promise<{ token: string; expiresAt: number }> {
  const token = randomToken(SESSION_PREFIX);
  const now = clock.now();
  const expiresAt = now + ttlMs;
  await db
    .insertInto('sessions')
    .values({
      id: randomUUID(),
      user_id: userId,
      token_hash: sha256(token),
      created_at: now,
      expires_at: expiresAt,
      revoked_at: null,
      ip,
      user_agent: userAgent?.slice(0, 512) ?? null,
    })
    .execute();
  return { token, expiresAt };
}

// Parameters: token hash, now.
const sessionUserQuery = precompiled((db: Kysely<AuthTables>) =>
  db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['users.id', 'users.email', 'users.email_verified_at', 'users.created_at'])
    .where('sessions.token_hash', '=', '')
    .where('sessions.revoked_at', 'is', null)
    .where('sessions.expires_at', '>', 0),
);

/** The user of a live session, or null for an unknown, expired or revoked token. */
export async function userForSession(deps: Pick<AuthDeps, 'db' | 'clock'>, token: string): Promise<User | null> {
  if (!token.startsWith(SESSION_PREFIX)) return null;
  const row = await sessionUserQuery(deps.db, [sha256(token), deps.clock.now()]);
  return row ? toUser(row) : null;
}

/** `ses_` + 43 base64url characters: the shape of every session token this service issues. */
export function isSessionToken(token: string): boolean {
  return /^ses_[A-Za-z0-9_-]{43}$/.test(token);
}

/**
 * Revokes a session, if it is live. Whether the token was live, already
 * revoked, expired, purged or never issued is not reported: logout is
 * idempotent, and its answer must not depend on whether the purge has run.
 */
export async function revokeSession(deps: Pick<AuthDeps, 'db' | 'clock'>, token: string): Promise<void> {
  await deps.db
    .updateTable('sessions')
    .set({ revoked_at: deps.clock.now() })
    .where('token_hash', '=', sha256(token))
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Revokes every live session of a user (the OAuth browser session included:
 * it is a row here too), except the one whose token hash is `keepTokenHash`.
 * Runs in the caller's transaction.
 */
export async function revokeUserSessions(db: Kysely<AuthTables>, userId: string, now: number, keepTokenHash?: string): Promise<void> {
  let query = db.updateTable('sessions').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null);
  if (keepTokenHash !== undefined) query = query.where('token_hash', '!=', keepTokenHash);
  await query.execute();
}
