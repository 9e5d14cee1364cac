import type { Clock } from '../platform/clock.ts';
import { randomToken, sha256 } from '../platform/crypto.ts';
import { HttpProblem } from '../platform/errors.ts';
import type { GatewayDeps } from './deps.ts';
import type { GatewayDb } from './schema.ts';

/**
 * Control-plane sessions. Table `gateway_sessions`: token_hash (SHA-256 of
 * the token, primary key), tenant_id, created_at, expires_at. The token is
 * `gws_` + 32 random bytes (base64url), returned once (signup, magic link);
 * logout deletes the row, the purge removes expired ones.
 */
export const SESSION_PREFIX = 'gws_';
const SESSION_SHAPE = /^gws_[A-Za-z0-9_-]{43}$/;

/** Stores a fresh session for a tenant, in the caller's transaction; returns the token. */
export async function createSession(
  db: GatewayDb,
  clock: Clock,
  ttlMs: number,
  tenantId: string,
): Promise<{ token: string; expiresAt: number }> {
  const token = randomToken(SESSION_PREFIX);
  const now = clock.now();
  await db
    .insertInto('gateway_sessions')
    .values({ token_hash: sha256(token), tenant_id: tenantId, created_at: now, expires_at: now + ttlMs })
    .execute();
  return { token, expiresAt: now + ttlMs };
}

/** `gws_` + 43 base64url characters: the shape of every session token the gateway issues. */
export function isSessionToken(token: string): boolean {
  return SESSION_SHAPE.test(token);
}

/**
 * The tenant of a live session, or a 401 that says what was wrong. A data-plane
 * key (`sk-gw-`) sent here is named as such: the commonest mistake.
 */
export async function tenantForSession(deps: Pick<GatewayDeps, 'db' | 'clock'>, token: string | undefined): Promise<string> {
  if (!token) throw new HttpProblem(401, 'missing_session', 'Send the session token as "Authorization: Bearer gws_...".');
  if (token.startsWith('sk-gw-')) {
    throw new HttpProblem(
      401,
      'api_key_not_session',
      'This is a data-plane API key (sk-gw-...), not a session token; the control plane takes the gws_ session token from signup or a magic link.',
    );
  }
  const invalid = () => new HttpProblem(401, 'invalid_session', 'The session token is expired, revoked or unknown; sign in again with a magic link.');
  if (!isSessionToken(token)) throw invalid();
  const row = await deps.db
    .selectFrom('gateway_sessions')
    .select('tenant_id')
    .where('token_hash', '=', sha256(token))
    .where('expires_at', '>', deps.clock.now())
    .executeTakeFirst();
  if (!row) throw invalid();
  return row.tenant_id;
}

/** Ends a session. Live, expired, already ended or never issued: the same outcome, so logout is idempotent. */
export async function revokeSession(db: GatewayDb, token: string): Promise<void> {
  await db.deleteFrom('gateway_sessions').where('token_hash', '=', sha256(token)).execute();
}
