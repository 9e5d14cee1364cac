import type { Clock } from '../../platform/clock.ts';
import { randomToken, sha256 } from '../../platform/crypto.ts';
import { HttpProblem } from '../../platform/errors.ts';
import { grantCheckDue, recheckGrant, revokeGrant, sealGrant } from './accounts-session-grants.ts';
import type { GatewayDeps } from '../deps.ts';
import type { GatewayDb } from '../schema.ts';

/**
 * Control-plane sessions. Table `gateway_sessions`: token_hash (SHA-256 of
 * the token, primary key), tenant_id, created_at, expires_at, and for a
 * console session opened through the account service its grant
 * (accounts-session-grants.ts). The token is `gws_` + 32 random bytes
 * (base64url), returned once (signup, magic link); logout deletes the row,
 * the purge removes expired ones.
 */
export const SESSION_PREFIX = 'gws_';
const SESSION_SHAPE = /^gws_[A-Za-z0-9_-]{43}$/;

/**
 * Stores a fresh session for a tenant, in the caller's transaction; returns
 * the token. `accountsGrant`: the refresh token of the account service's
 * sign-in that opened it, kept sealed under `key` and rechecked.
 */
export async function createSession(
  db: GatewayDb,
  clock: Clock,
  ttlMs: number,
  tenantId: string,
  accountsGrant?: { refreshToken: string; key: Buffer },
): Promise<{ token: string; expiresAt: number }> {
  const token = randomToken(SESSION_PREFIX);
  const hash = sha256(token);
  const now = clock.now();
  const grant = accountsGrant ? { accounts_grant: sealGrant(accountsGrant.key, hash, accountsGrant.refreshToken), accounts_checked_at: now } : {};
  await db
    .insertInto('gateway_sessions')
    .values({ token_hash: hash, tenant_id: tenantId, created_at: now, expires_at: now + ttlMs, ...grant })
    .execute();
  return { token, expiresAt: now + ttlMs };
}

/** `gws_` + 43 base64url characters: the shape of every session token the gateway issues. */
export function isSessionToken(token: string): boolean {
  return SESSION_SHAPE.test(token);
}

/**
 * The tenant of a live session, or a 401 that says what was wrong. A data-plane
 * key (`sk-gw-`) sent here is named as such: the commonest mistake. A session
 * opened through the account service has its grant rechecked there when due
 * (accounts-session-grants.ts); a refused grant ends the session.
 */
export async function tenantForSession(deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'log'>, token: string | undefined): Promise<string> {
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
  const hash = sha256(token);
  const now = deps.clock.now();
  const row = await deps.db
    .selectFrom('gateway_sessions')
    .select(['tenant_id', 'accounts_grant', 'accounts_checked_at'])
    .where('token_hash', '=', hash)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (!row) throw invalid();
  const session = { hash, grant: row.accounts_grant, checkedAt: row.accounts_checked_at };
  if (grantCheckDue(deps, session, now) && (await recheckGrant(deps, { ...session, grant: row.accounts_grant! })) === 'ended') {
    throw new HttpProblem(
      401,
      'invalid_session',
      'The account this session was opened with ended it (its password was reset, or the gateway\'s access was revoked on the account page); sign in again.',
    );
  }
  return row.tenant_id;
}

/**
 * Ends a session. Live, expired, already ended or never issued: the same
 * outcome, so logout is idempotent. A grant it kept is revoked at the
 * account service after the reply (best effort).
 */
export async function revokeSession(deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'background'>, token: string): Promise<void> {
  const hash = sha256(token);
  const row = await deps.db.selectFrom('gateway_sessions').select('accounts_grant').where('token_hash', '=', hash).executeTakeFirst();
  await deps.db.deleteFrom('gateway_sessions').where('token_hash', '=', hash).execute();
  const sealed = row?.accounts_grant;
  if (sealed) deps.background.run('account grant revocation', () => revokeGrant(deps, hash, sealed));
}
