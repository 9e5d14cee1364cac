import { HttpProblem, tooManyRequests } from '../platform/errors.ts';
import { enqueueEmail } from '../platform/mail.ts';
import { requireEmail } from './accounts.ts';
import type { AuthDeps } from './deps.ts';
import { newSignInEmail } from './emails.ts';
import { addressKey, addressLockedFor, clearAddressFailures, recordFailure } from './login-failures.ts';
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

/** Where the sign-in comes from: POST /v1/login (behind X-Api-Key) or the public OAuth sign-in page. */
export interface LoginOptions {
  /**
   * The public page: the lock it enforces is the address's (counted for
   * every address, see login-failures.ts), answered in the same words for an
   * address with an account and one without, so the page tells nobody which
   * addresses have accounts. The API keeps its documented account_locked.
   */
  surface: 'api' | 'page';
}

const addressLocked = (retryAfterMs: number) =>
  tooManyRequests('address_locked', 'Too many failed sign-ins with this email address; try again later.', retryAfterMs);

/**
 * Password login, in this order:
 * 1. the per-IP bucket (credential stuffing);
 * 2. the password is checked with bcrypt, against a dummy hash when the email
 *    is unknown, so both cost the same time;
 * 3. on the page: a locked address answers 429 (the same for every address);
 *    on the API: a locked account answers 429 account_locked, an unknown
 *    address 401; whatever the password;
 * 4. a wrong password or an unknown address counts a failure for the address
 *    and for the account if there is one; the Nth consecutive one locks each;
 * 5. a right password on an unverified account answers 403;
 * 6. success resets both counts, opens a session and queues the "new sign-in"
 *    email in the same transaction (the worker sends it after the reply).
 */
export async function login(deps: AuthDeps, input: LoginInput, options: LoginOptions = { surface: 'api' }): Promise<LoginResult> {
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
  const address = addressKey(email);

  const now = clock.now();
  const addressLockMs = await addressLockedFor(db, address, now);
  if (options.surface === 'page') {
    if (addressLockMs > 0) throw addressLocked(addressLockMs);
  } else {
    if (user?.locked_until != null && user.locked_until > now) {
      throw tooManyRequests('account_locked', 'Too many failed sign-ins; the account is locked for a while.', user.locked_until - now);
    }
    if (!user && addressLockMs > 0) throw invalidCredentials();
  }
  if (!user || !passwordOk) {
    await recordFailure(deps, address, user?.id, now);
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
    await clearAddressFailures(trx, address);
    const s = await createSession(trx, clock, config.sessionTtlMs, user.id, input.ip, input.userAgent);
    await enqueueEmail(trx, deps.outbox, newSignInEmail(user.email, now, input.ip, input.userAgent));
    return s;
  });
  deps.mailQueued();
  return { user: toUser(user), sessionToken: session.token, expiresAt: session.expiresAt };
}
