import { sha256 } from '../platform/crypto.ts';
import { HttpProblem, tooManyRequests } from '../platform/errors.ts';
import { enqueueEmail } from '../platform/mail.ts';
import { requirePassword } from './accounts.ts';
import type { AuthDeps } from './deps.ts';
import { passwordChangedEmail } from './emails.ts';
import { addressKey, clearAddressFailures, recordFailure } from './login-failures.ts';
import { deleteUnusedResetTokens } from './password-reset.ts';
import { hashPassword, PASSWORD_MAX, passwordLength, verifyPassword } from './passwords.ts';
import { toUser, type User } from './schema.ts';
import { revokeUserSessions, userForSession } from './sessions.ts';

export interface ChangePasswordInput {
  sessionToken: string;
  currentPassword: string;
  newPassword: string;
}

const invalidSession = () => new HttpProblem(401, 'invalid_session', 'The session is expired, revoked or unknown.');
const wrongPassword = () => new HttpProblem(401, 'wrong_password', 'The current password is wrong.');

/**
 * POST /v1/password/change, in this order:
 * 1. a live session (401 invalid_session);
 * 2. a locked account answers 429 account_locked, as sign-in does, whatever the passwords;
 * 3. the new password follows the rules of registration;
 * 4. the current password is checked with bcrypt; a wrong one counts toward
 *    the account's lockout like a failed sign-in and answers 401 wrong_password;
 * 5. one transaction: set the new hash and clear the failure count, revoke
 *    every other session (this one stays signed in), delete unused reset
 *    links, queue "your password was changed".
 */
export async function changePassword(deps: AuthDeps, input: ChangePasswordInput): Promise<User> {
  const session = await userForSession(deps, input.sessionToken);
  if (!session) throw invalidSession();
  const user = await deps.db.selectFrom('users').selectAll().where('id', '=', session.id).executeTakeFirst();
  if (!user) throw invalidSession();
  const checkedAt = deps.clock.now();
  if (user.locked_until !== null && user.locked_until > checkedAt) {
    throw tooManyRequests('account_locked', 'Too many wrong passwords; the account is locked for a while.', user.locked_until - checkedAt);
  }
  requirePassword(input.newPassword, 'new_password');
  // An over-long password can match nothing; refuse it before spending bcrypt time on it.
  const currentOk = passwordLength(input.currentPassword) <= PASSWORD_MAX && (await verifyPassword(input.currentPassword, user.password_hash));
  if (!currentOk) {
    await recordFailure(deps, addressKey(user.email), user.id, checkedAt);
    throw wrongPassword();
  }

  const passwordHash = await hashPassword(input.newPassword, deps.config.bcryptCost);
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('users')
      .set({ password_hash: passwordHash, failed_logins: 0, locked_until: null, updated_at: now })
      .where('id', '=', user.id)
      .execute();
    await clearAddressFailures(trx, addressKey(user.email));
    await revokeUserSessions(trx, user.id, now, sha256(input.sessionToken));
    await deleteUnusedResetTokens(trx, user.id);
    await enqueueEmail(trx, deps.outbox, passwordChangedEmail(user.email, now, 'change'));
  });
  deps.mailQueued();
  deps.log.info({ userId: user.id }, 'password changed');
  return toUser(user);
}
