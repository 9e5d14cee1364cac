import { decryptWithAny, encrypt } from '../../platform/crypto.ts';
import { AccountsClient } from './accounts-client.ts';
import type { GatewayDeps } from '../deps.ts';

/**
 * A console session opened through the account service ("Sign in with your
 * account") keeps that sign-in's grant: its refresh token, sealed with
 * AES-256-GCM under GATEWAY_ENCRYPTION_KEY, the associated data naming the
 * session's row (`gateway_sessions.accounts_grant`). When the session is used
 * (a console page, or the API with its token) and its last check is older
 * than GATEWAY_ACCOUNTS_SESSION_CHECK_SECONDS, the grant is refreshed at the
 * account service: a password reset there revokes the grants of its
 * first-party client (src/auth/oauth/first-party-grants.ts), and so, within
 * that interval, ends the console sessions it opened (ASVS 4.0.3 V3.3.3:
 * ending sessions after a reset is effective at relying parties too).
 * Revoking the console's access on the account page does the same.
 *
 * The account service rotates refresh tokens with reuse detection, so only
 * one refresh of a session may run at once, on any replica: each check is
 * claimed first by a compare-and-set of `accounts_checked_at`; the uses that
 * lose the claim go on (the session was live at the last check, within the
 * interval), and the rotated token is stored before anyone checks again.
 */

export type GrantCheck = 'live' | 'ended';

/** After an unreachable account service the session goes on; a use this much later checks again. */
const RETRY_AFTER_UNAVAILABLE_MS = 30_000;

const grantAad = (sessionHash: string) => `console-session-grant:${sessionHash}`;

/** The sealed form of a grant's refresh token for the session whose token hashes to `sessionHash`. */
export function sealGrant(key: Buffer, sessionHash: string, refreshToken: string): string {
  return encrypt(key, refreshToken, grantAad(sessionHash));
}

type Deps = Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'log'>;

/** True when a session's grant is due for a check (and the account sign-in is configured, so it can be checked). */
export function grantCheckDue(deps: Pick<GatewayDeps, 'config'>, session: { grant: string | null; checkedAt: number | null }, now: number): boolean {
  return session.grant !== null && deps.config.accounts !== undefined && now - (session.checkedAt ?? 0) >= deps.config.accountsSessionCheckMs;
}

/**
 * Checks a due grant, in this order:
 * 1. the claim: `accounts_checked_at` set to now only if it still holds the
 *    value read; lost: another use is checking (or has), and this one goes on;
 * 2. the grant opened (the current key or a GATEWAY_ENCRYPTION_KEY_PREVIOUS
 *    one); sealed under no key given: the session ends;
 * 3. the refresh: rotated, the new token is stored (sealed under the current
 *    key) with the time; refused (invalid_grant): the session is deleted,
 *    `ended`; the account service unavailable: the session goes on, logged,
 *    and a use 30 s or more later checks again.
 */
export async function recheckGrant(deps: Deps, session: { hash: string; grant: string; checkedAt: number | null }): Promise<GrantCheck> {
  const settings = deps.config.accounts;
  if (!settings) return 'live';
  const now = deps.clock.now();
  const claim = await deps.db
    .updateTable('gateway_sessions')
    .set({ accounts_checked_at: now })
    .where('token_hash', '=', session.hash)
    .where((eb) => (session.checkedAt === null ? eb('accounts_checked_at', 'is', null) : eb('accounts_checked_at', '=', session.checkedAt)))
    .executeTakeFirst();
  if (Number(claim.numUpdatedRows) !== 1) return 'live';

  let refreshToken: string;
  try {
    refreshToken = decryptWithAny([deps.config.encryptionKey, ...deps.config.previousEncryptionKeys], session.grant, grantAad(session.hash)).plaintext;
  } catch {
    deps.log.warn({ code: 'accounts_grant_unreadable' }, 'console session ended: its account grant opens with no encryption key given');
    await endSession(deps, session.hash);
    return 'ended';
  }
  const client = new AccountsClient(settings);
  let outcome: Awaited<ReturnType<AccountsClient['refresh']>>;
  try {
    outcome = await client.refresh(await client.metadata(now), refreshToken);
  } catch (err) {
    deps.log.warn({ code: 'accounts_unavailable', err }, 'console session grant not checked (the account service is unavailable); the session goes on');
    await deps.db
      .updateTable('gateway_sessions')
      .set({ accounts_checked_at: now - deps.config.accountsSessionCheckMs + RETRY_AFTER_UNAVAILABLE_MS })
      .where('token_hash', '=', session.hash)
      .where('accounts_checked_at', '=', now)
      .execute();
    return 'live';
  }
  if (outcome === 'refused') {
    deps.log.info({ code: 'accounts_grant_refused' }, 'console session ended: the account service refused its grant (a password reset, or access revoked)');
    await endSession(deps, session.hash);
    return 'ended';
  }
  const stored = await deps.db
    .updateTable('gateway_sessions')
    .set({ accounts_grant: sealGrant(deps.config.encryptionKey, session.hash, outcome.refreshToken), accounts_checked_at: deps.clock.now() })
    .where('token_hash', '=', session.hash)
    .executeTakeFirst();
  // Signed out while the refresh ran: the rotated token is nobody's.
  if (Number(stored.numUpdatedRows) !== 1) await client.revoke(await client.metadata(now), outcome.refreshToken);
  return 'live';
}

async function endSession(deps: Deps, sessionHash: string): Promise<void> {
  await deps.db.deleteFrom('gateway_sessions').where('token_hash', '=', sessionHash).execute();
}

/** Revokes an ended session's grant at the account service (best effort: the grant otherwise expires there). */
export async function revokeGrant(deps: Pick<GatewayDeps, 'config' | 'clock'>, sessionHash: string, sealed: string): Promise<void> {
  const settings = deps.config.accounts;
  if (!settings) return;
  try {
    const refreshToken = decryptWithAny([deps.config.encryptionKey, ...deps.config.previousEncryptionKeys], sealed, grantAad(sessionHash)).plaintext;
    const client = new AccountsClient(settings);
    await client.revoke(await client.metadata(deps.clock.now()), refreshToken);
  } catch {
    // Unreadable, or the account service unavailable: the grant expires there by itself.
  }
}
