import { sha256 } from '../platform/crypto.ts';
import { HttpProblem, tooManyRequests } from '../platform/errors.ts';
import { enqueueEmail } from '../platform/mail.ts';
import { requirePassword } from './accounts.ts';
import type { AuthDeps } from './deps.ts';
import { passwordChangedEmail } from './emails.ts';
import { inTurn } from './attempt-turns.ts';
import { addressKey, clearAddressFailures, clearedAccount, recordFailure, takeAttempt, waitFor } from './login-failures.ts';
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
 * 2. the new password follows the rules of registration (a refused one counts nothing);
 * 3. in the address's turn, an attempt is taken in the account's count
 *    before any bcrypt work, as sign-in takes one (login-failures.ts): a
 *    locked account, or one whose allowance attempts under way fill,
 *    answers 429 account_locked;
 * 4. the current password is checked with bcrypt; a wrong one settles the
 *    attempt as a failure toward the account's lockout, like a failed
 *    sign-in, and answers 401 wrong_password;
 * 5. one transaction, only if the account's hash is still the one verified
 *    (a concurrent reset or change makes the current password given a wrong
 *    one): set the new hash and clear the failure count, revoke every other
 *    session (this one stays signed in), delete unused reset links, queue
 *    "your password was changed".
 */
export async function changePassword(deps: AuthDeps, input: ChangePasswordInput): Promise<User> {
  const session = await userForSession(deps, input.sessionToken);
  if (!session) throw invalidSession();
  requirePassword(input.newPassword, 'new_password');
  return inTurn(addressKey(session.email), deps.config.lockout.maxFailures, () => attemptChange(deps, input, session.id));
}

/** Steps 3 to 5 of {@link changePassword}, in the address's turn, as a sign-in's (attempt-turns.ts). */
async function attemptChange(deps: AuthDeps, input: ChangePasswordInput, userId: string): Promise<User> {
  const takenAt = deps.clock.now();
  const { user, attempt } = await deps.db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
    if (!user) throw invalidSession();
    const attempt = await takeAttempt(trx, deps.config.lockout, addressKey(user.email), user.id, takenAt);
    if (!attempt.heldAccount) {
      throw tooManyRequests('account_locked', 'Too many wrong passwords; the account is locked for a while.', await waitFor(trx, 'account', attempt, takenAt));
    }
    return { user, attempt };
  });
  // An over-long password can match nothing; refuse it before spending bcrypt time on it.
  const currentOk = passwordLength(input.currentPassword) <= PASSWORD_MAX && (await verifyPassword(input.currentPassword, user.password_hash));
  if (!currentOk) {
    await recordFailure(deps, attempt, deps.clock.now());
    throw wrongPassword();
  }

  const passwordHash = await hashPassword(input.newPassword, deps.config.bcryptCost);
  const now = deps.clock.now();
  const changed = await deps.db.transaction().execute(async (trx) => {
    const current = await trx
      .updateTable('users')
      .set({ password_hash: passwordHash, ...clearedAccount(attempt.heldAccount), updated_at: now })
      .where('id', '=', user.id)
      .where('password_hash', '=', user.password_hash)
      .returning('id')
      .executeTakeFirst();
    if (!current) return false;
    await clearAddressFailures(trx, attempt.address, attempt.heldAddress);
    await revokeUserSessions(trx, user.id, now, sha256(input.sessionToken));
    await deleteUnusedResetTokens(trx, user.id);
    await enqueueEmail(trx, deps.outbox, passwordChangedEmail(user.email, now, 'change'));
    return true;
  });
  if (!changed) {
    await recordFailure(deps, attempt, deps.clock.now());
    throw wrongPassword();
  }
  deps.mailQueued();
  deps.log.info({ userId: user.id }, 'password changed');
  return toUser(user);
}
