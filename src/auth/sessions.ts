import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../platform/clock.ts';
import { randomToken, sha256 } from '../platform/crypto.ts';
import { precompiled } from '../platform/db.ts';
import { LAST_USED_RESOLUTION } from './bearer.ts';
import type { AuthDeps } from './deps.ts';
import { deviceLabel } from './device-label.ts';
import { type AuthTables, toUser, type User } from './schema.ts';

/**
 * Sessions. Table `sessions`: id, user_id, token_hash (SHA-256 of the token,
 * unique), created_at, expires_at, revoked_at, ip, user_agent, last_used_at.
 * The token is `ses_` + 32 random bytes (base64url), shown once at login;
 * lookups go by its hash, so a database leak reveals no usable token and no
 * secret is ever compared byte by byte. The `id` (a random UUID) is what the
 * user's own session list shows: it names a session, it signs nobody in.
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
      last_used_at: now,
    })
    .execute();
  return { token, expiresAt };
}

// Parameters: token hash, now.
const sessionUserQuery = precompiled((db: Kysely<AuthTables>) =>
  db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['sessions.id as session_id', 'sessions.last_used_at'])
    .select(['users.id', 'users.email', 'users.email_verified_at', 'users.created_at'])
    .where('sessions.token_hash', '=', '')
    .where('sessions.revoked_at', 'is', null)
    .where('sessions.expires_at', '>', 0),
);

/** A live session: its id (the one the session list shows) and its user. */
export interface LiveSession {
  id: string;
  user: User;
}

/**
 * The live session of a token, or null for an unknown, expired or revoked
 * one. Each use is a use: last_used_at is written when it is a minute or
 * more old (LAST_USED_RESOLUTION), so a busy session costs one write a
 * minute, not one per request; the conditional update lets only one of
 * several concurrent requests write.
 */
export async function findSession(deps: Pick<AuthDeps, 'db' | 'clock'>, token: string): Promise<LiveSession | null> {
  if (!token.startsWith(SESSION_PREFIX)) return null;
  const now = deps.clock.now();
  const row = await sessionUserQuery(deps.db, [sha256(token), now]);
  if (!row) return null;
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION) {
    await deps.db
      .updateTable('sessions')
      .set({ last_used_at: now })
      .where('id', '=', row.session_id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', now - LAST_USED_RESOLUTION)]))
      .execute();
  }
  return { id: row.session_id, user: toUser(row) };
}

/** The user of a live session, or null for an unknown, expired or revoked token. */
export async function userForSession(deps: Pick<AuthDeps, 'db' | 'clock'>, token: string): Promise<User | null> {
  return (await findSession(deps, token))?.user ?? null;
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

/** A session as its user's list shows it: never the token or its hash. */
export interface SessionInfo {
  id: string;
  /** A short label from the user agent ("Firefox on Linux"; device-label.ts). */
  device: string;
  user_agent: string | null;
  /** The address the session signed in from. */
  ip: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string;
  /** The session the request came with. */
  current: boolean;
}

/** The user's live (unrevoked, unexpired) sessions, newest first; `currentId` is marked current. */
export async function listUserSessions(deps: Pick<AuthDeps, 'db' | 'clock'>, userId: string, currentId: string): Promise<SessionInfo[]> {
  const rows = await deps.db
    .selectFrom('sessions')
    .select(['id', 'user_agent', 'ip', 'created_at', 'last_used_at', 'expires_at'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', deps.clock.now())
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    device: deviceLabel(row.user_agent),
    user_agent: row.user_agent,
    ip: row.ip,
    created_at: new Date(row.created_at).toISOString(),
    last_used_at: row.last_used_at === null ? null : new Date(row.last_used_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
    current: row.id === currentId,
  }));
}

/**
 * Signs one of the user's sessions out ("sign out that device"), the current
 * one included. Whether the id was the user's live session, already revoked,
 * purged, another user's or never issued is not reported: the caller answers
 * the same in every case, so the answer tells nothing about other users'
 * sessions and stays the same before and after the purge. Another user's
 * session is never touched (the update is keyed by both ids).
 */
export async function endUserSession(deps: Pick<AuthDeps, 'db' | 'clock'>, userId: string, sessionId: string): Promise<void> {
  await deps.db
    .updateTable('sessions')
    .set({ revoked_at: deps.clock.now() })
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
}
