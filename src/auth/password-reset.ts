import type { Kysely } from 'kysely';
import { sha256 } from '../platform/crypto.ts';
import { HttpProblem } from '../platform/errors.ts';
import { enqueueEmail } from '../platform/mail.ts';
import { revokeAccountGrants } from './account-grants.ts';
import { insertEmailToken, requireEmail, requirePassword, silentlyLimited } from './accounts.ts';
import type { AuthDeps } from './deps.ts';
import { passwordChangedEmail, passwordResetEmail, signUpExistingAccountEmail } from './emails.ts';
import { addressKey, clearAddressFailures } from './login-failures.ts';
import { revokeFirstPartyGrants } from './oauth/first-party-grants.ts';
import { hashPassword } from './passwords.ts';
import { type AuthTables, toUser, type User } from './schema.ts';
import { revokeUserSessions } from './sessions.ts';

/**
 * Password reset. Table `password_reset_tokens`: id, user_id, token_hash
 * (SHA-256 of the token, unique), created_at, expires_at, used_at. The token
 * is `prt_` + 32 random bytes (base64url), sent only in the email.
 */
export const RESET_PREFIX = 'prt_';

const invalidToken = () =>
  new HttpProblem(400, 'invalid_token', 'The reset link is not valid (unknown, or replaced by a newer one); ask for a new email.');
const tokenUsed = () => new HttpProblem(409, 'token_used', 'The reset link has already been used; ask for a new email.');
const tokenExpired = () => new HttpProblem(410, 'token_expired', 'The reset link has expired; ask for a new email.');

/**
 * POST /v1/password/forgot, in this order:
 * 1. an address that cannot exist is 400 invalid_email (this says nothing about accounts);
 * 2. the per-IP bucket, then the per-address bucket (mail bombing of one
 *    address from many IPs); over either, nothing more happens, silently;
 * 3. the rest runs after the caller has answered, so neither the reply nor
 *    its timing depends on whether the address has an account: look the
 *    account up and, if there is one, replace its unused reset links by a
 *    new one and queue the email, in one transaction.
 * The sign-up page calls it too (`occasion: 'sign-up'`) for an address that
 * already has an account: the same limits and link, an email that says why.
 */
export async function requestPasswordReset(
  deps: AuthDeps,
  input: { email: string; ip: string; occasion?: ResetOccasion },
): Promise<void> {
  const email = requireEmail(input.email);
  if (await silentlyLimited(deps, [deps.limiters.forgot, deps.limiters.forgotPerEmail], input.ip, email, 'forgot')) return;
  deps.background.run('password reset email', () => issueReset(deps, email, input.occasion ?? 'forgot'));
}

/** Why a reset link is sent: asked for (POST /v1/password/forgot), or a sign-up with an address that has an account. */
export type ResetOccasion = 'forgot' | 'sign-up';

async function issueReset(deps: AuthDeps, email: string, occasion: ResetOccasion): Promise<void> {
  const now = deps.clock.now();
  const queued = await deps.db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
    if (!user) return false;
    // One live link per account: a new request invalidates the links sent before it.
    await deleteUnusedResetTokens(trx, user.id);
    const token = await insertEmailToken(trx, 'password_reset_tokens', {
      prefix: RESET_PREFIX,
      userId: user.id,
      now,
      ttlMs: deps.config.resetTtlMs,
    });
    const message = occasion === 'sign-up' ? signUpExistingAccountEmail : passwordResetEmail;
    await enqueueEmail(trx, deps.outbox, message(deps.config, email, token));
    return true;
  });
  if (queued) deps.mailQueued();
}

/** Deletes a user's reset links that were not used (after a new request, a reset or a change). */
export async function deleteUnusedResetTokens(db: Kysely<AuthTables>, userId: string): Promise<void> {
  await db.deleteFrom('password_reset_tokens').where('user_id', '=', userId).where('used_at', 'is', null).execute();
}

/**
 * POST /v1/password/reset, in this order:
 * 1. the new password follows the rules of registration (a refused password
 *    leaves the link usable);
 * 2. the link must be known, unused and within its lifetime (a read: no
 *    bcrypt time is spent on a token that cannot succeed);
 * 3. bcrypt of the new password, outside the transaction;
 * 4. one transaction: claim the link (conditional on used_at, so two
 *    concurrent uses cannot both succeed); set the password, verify the
 *    address (following the link proved control of it) and clear the
 *    lockout; delete the other unused links; revoke every session, the OAuth
 *    browser session included; when the account was unverified, revoke
 *    everything else issued to it too (pre-account hijacking: whoever created
 *    it never proved the address was theirs); queue "your password was changed".
 */
export async function resetPassword(deps: AuthDeps, input: { token: string; password: string }): Promise<User> {
  requirePassword(input.password);
  const hash = sha256(input.token);
  const row = await deps.db.selectFrom('password_reset_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  if (!row) throw invalidToken();
  if (row.used_at !== null) throw tokenUsed();
  if (row.expires_at <= deps.clock.now()) throw tokenExpired();

  const passwordHash = await hashPassword(input.password, deps.config.bcryptCost);
  const now = deps.clock.now();
  const { user, wasVerified } = await deps.db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('password_reset_tokens')
      .set({ used_at: now })
      .where('id', '=', row.id)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) throw await whyUnclaimable(trx, row.id, now);
    const before = await trx.selectFrom('users').select('email_verified_at').where('id', '=', row.user_id).executeTakeFirstOrThrow();
    const updated = await trx
      .updateTable('users')
      .set((eb) => ({
        password_hash: passwordHash,
        email_verified_at: eb.fn.coalesce('email_verified_at', eb.val(now)),
        failed_logins: 0,
        locked_until: null,
        updated_at: now,
      }))
      .where('id', '=', row.user_id)
      .returning(['id', 'email', 'email_verified_at', 'created_at'])
      .executeTakeFirstOrThrow();
    await deleteUnusedResetTokens(trx, row.user_id);
    await clearAddressFailures(trx, addressKey(updated.email));
    await revokeUserSessions(trx, row.user_id, now);
    await revokeFirstPartyGrants(trx, deps.config.oauth, row.user_id, now);
    if (before.email_verified_at === null) await revokeAccountGrants(trx, row.user_id, now);
    await enqueueEmail(trx, deps.outbox, passwordChangedEmail(updated.email, now, 'reset'));
    return { user: toUser(updated), wasVerified: before.email_verified_at !== null };
  });
  deps.mailQueued();
  deps.log.info({ userId: user.id, wasVerified }, 'password reset');
  return user;
}

/** Why a claim failed: a concurrent use, expiry meanwhile, or replacement by a newer link. */
async function whyUnclaimable(trx: Kysely<AuthTables>, id: string, now: number): Promise<HttpProblem> {
  const row = await trx.selectFrom('password_reset_tokens').select(['used_at', 'expires_at']).where('id', '=', id).executeTakeFirst();
  if (!row) return invalidToken();
  if (row.used_at !== null) return tokenUsed();
  return row.expires_at <= now ? tokenExpired() : invalidToken();
}
