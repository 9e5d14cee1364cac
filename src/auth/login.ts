import { sql } from 'kysely';
import { HttpProblem, tooManyRequests } from '../platform/errors.ts';
import { enqueueEmail } from '../platform/mail.ts';
import { requireEmail } from './accounts.ts';
import type { AuthDeps } from './deps.ts';
import { newSignInEmail } from './emails.ts';
import { dummyHash, PASSWORD_MAX, passwordLength, verifyPassword } from './passwords.ts';
import { toUser, type User } from './schema.ts';
import { createSession } from './sessions.ts';

export interface LoginInput {
  email: string;
  password: string;
  ip: string;
  userAgent: string | undefined;
}

export interface LoginResult {
  user: User;
  sessionToken: string;
  expiresAt: number;
}

const invalidCredentials = () => new HttpProblem(401, 'invalid_credentials', 'The email address or password is wrong.');

/**
 * Password login, in this order:
 * 1. the per-IP bucket (credential stuffing);
 * 2. the password is checked with bcrypt, against a dummy hash when the email
 *    is unknown, so both cost the same time;
 * 3. a locked account answers 429 whatever the password;
 * 4. a wrong password counts a failure; the Nth consecutive one locks the account;
 * 5. a right password on an unverified account answers 403;
 * 6. success resets the count, opens a session and queues the "new sign-in"
 *    email in the same transaction (the worker sends it after the reply).
 */
export async function login(deps: AuthDeps, input: LoginInput): Promise<LoginResult> {
  const limit = await deps.limiters.login.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'login' });
    throw tooManyRequests('rate_limited', 'Too many sign-in attempts from this IP address; try again later.', limit.retryAfterMs);
  }
  const email = requireEmail(input.email);
  const { config, clock, db } = deps;
  // An over-long password can match nothing; refuse it before spending bcrypt time on it.
  if (passwordLength(input.password) > PASSWORD_MAX) throw invalidCredentials();

  const user = await db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
  const passwordOk = await verifyPassword(input.password, user?.password_hash ?? (await dummyHash(config.bcryptCost)));
  if (!user) throw invalidCredentials();

  const now = clock.now();
  if (user.locked_until !== null && user.locked_until > now) {
    throw tooManyRequests('account_locked', 'Too many failed sign-ins; the account is locked for a while.', user.locked_until - now);
  }
  if (!passwordOk) {
    await recordFailure(deps, user.id, now);
    throw invalidCredentials();
  }
  if (user.email_verified_at === null) {
    throw new HttpProblem(403, 'email_not_verified', 'Confirm your email address before signing in.');
  }

  const session = await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('users')
      .set({ failed_logins: 0, locked_until: null })
      .where('id', '=', user.id)
      .where((eb) => eb.or([eb('failed_logins', '!=', 0), eb('locked_until', 'is not', null)]))
      .execute();
    const s = await createSession(trx, clock, config.sessionTtlMs, user.id, input.ip, input.userAgent);
    await enqueueEmail(trx, clock, newSignInEmail(user.email, now, input.ip, input.userAgent));
    return s;
  });
  deps.mailQueued();
  return { user: toUser(user), sessionToken: session.token, expiresAt: session.expiresAt };
}

/**
 * Counts a failure atomically (concurrent wrong guesses all count) and locks
 * the account when the count reaches the limit; the count starts over then,
 * so after the lock expires the next run of failures locks it again.
 */
async function recordFailure(deps: AuthDeps, userId: string, now: number): Promise<void> {
  const { maxFailures, lockMs } = deps.config.lockout;
  await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('users')
      .set({ failed_logins: sql`failed_logins + 1`, updated_at: now })
      .where('id', '=', userId)
      .returning('failed_logins')
      .executeTakeFirst();
    if (row && row.failed_logins >= maxFailures) {
      await trx
        .updateTable('users')
        .set({ failed_logins: 0, locked_until: now + lockMs })
        .where('id', '=', userId)
        .execute();
      deps.log.warn({ userId }, 'account locked after repeated failed sign-ins');
    }
  });
}
