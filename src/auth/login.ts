import { HttpProblem, tooManyRequests } from '../platform/errors.ts';
import { enqueueEmail } from '../platform/mail.ts';
import { requireEmail } from './accounts.ts';
import type { AuthDeps } from './deps.ts';
import { newSignInEmail } from './emails.ts';
import { inTurn } from './attempt-turns.ts';
import { addressKey, clearAddressFailures, clearedAccount, recordFailure, releaseAttempt, takeAttempt, waitFor } from './login-failures.ts';
import { dummyHash, hashCost, hashPassword, PASSWORD_MAX, passwordLength, verifyPassword } from './passwords.ts';
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
const accountLocked = (retryAfterMs: number) =>
  tooManyRequests('account_locked', 'Too many failed sign-ins; the account is locked for a while.', retryAfterMs);

/**
 * Password login, in this order:
 * 1. the per-IP bucket (credential stuffing);
 * 2. in the address's turn (attempt-turns.ts), an attempt is taken before
 *    any bcrypt work, in one transaction with the lock check
 *    (login-failures.ts): on the page, a locked address (or one whose
 *    allowance attempts under way fill) answers 429, the same for every
 *    address; on the API, a locked account answers 429 account_locked and a
 *    locked unknown address 401; nothing is counted then;
 * 3. the password is checked with bcrypt, against a dummy hash when the email
 *    is unknown, so both cost the same time;
 * 4. a wrong password or an unknown address settles the attempt as a
 *    failure for the address and for the account if there is one; the Nth
 *    consecutive one locks each;
 * 5. a right password on an unverified account ends the attempt and answers 403;
 * 6. success, in one transaction, only if the account's hash is still the
 *    one just verified (a reset or change that committed meanwhile makes it
 *    a failure, issue 31 A3): reset both counts, store the hash again at
 *    AUTH_BCRYPT_COST if it was made at another cost (A5), open a session
 *    and queue the "new sign-in" email (the worker sends it after the reply).
 */
export async function login(deps: AuthDeps, input: LoginInput, options: LoginOptions = { surface: 'api' }): Promise<LoginResult> {
  const limit = await deps.limiters.login.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'login' });
    throw tooManyRequests('rate_limited', 'Too many sign-in attempts from this IP address; try again later.', limit.retryAfterMs);
  }
  const email = requireEmail(input.email);
  const { config } = deps;
  // An over-long password can match nothing; refuse it before spending bcrypt time on it.
  if (passwordLength(input.password) > PASSWORD_MAX) throw invalidCredentials();

  const address = addressKey(email);
  return inTurn(address, config.lockout.maxFailures, () => attemptLogin(deps, input, options.surface, email, address));
}

/** Steps 2 to 6 of {@link login}, in the address's turn (attempt-turns.ts). */
async function attemptLogin(deps: AuthDeps, input: LoginInput, surface: LoginOptions['surface'], email: string, address: string): Promise<LoginResult> {
  const { config, clock, db } = deps;
  const takenAt = clock.now();
  const { user, attempt } = await db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
    const attempt = await takeAttempt(trx, config.lockout, address, user?.id, takenAt);
    // Thrown inside the transaction, so that a refused attempt takes no place in either count.
    if (surface === 'page') {
      if (!attempt.heldAddress) throw addressLocked(await waitFor(trx, 'address', attempt, takenAt));
    } else if (user) {
      if (!attempt.heldAccount) throw accountLocked(await waitFor(trx, 'account', attempt, takenAt));
    } else if (!attempt.heldAddress) {
      throw invalidCredentials();
    }
    return { user, attempt };
  });

  const passwordOk = await verifyPassword(input.password, user?.password_hash ?? (await dummyHash(config.bcryptCost)));
  if (!user || !passwordOk) {
    await recordFailure(deps, attempt, clock.now());
    throw invalidCredentials();
  }
  if (user.email_verified_at === null) {
    await releaseAttempt(db, attempt);
    throw new HttpProblem(403, 'email_not_verified', 'Confirm your email address before signing in.');
  }

  // A hash made at another cost is replaced, so old-cost accounts stop answering faster than unknown addresses.
  const rehashed = hashCost(user.password_hash) === config.bcryptCost ? undefined : await hashPassword(input.password, config.bcryptCost);
  const now = clock.now();
  const session = await db.transaction().execute(async (trx) => {
    // The row lock this update takes orders it with a reset's or change's update of the same row (PostgreSQL);
    // SQLite runs one write transaction at a time. Either way the reset's revocation sees this session, or this sees its hash.
    const current = await trx
      .updateTable('users')
      .set({ ...clearedAccount(attempt.heldAccount), ...(rehashed ? { password_hash: rehashed } : {}) })
      .where('id', '=', user.id)
      .where('password_hash', '=', user.password_hash)
      .returning('id')
      .executeTakeFirst();
    if (!current) return undefined;
    await clearAddressFailures(trx, address, attempt.heldAddress);
    const s = await createSession(trx, clock, config.sessionTtlMs, user.id, input.ip, input.userAgent);
    await enqueueEmail(trx, deps.outbox, newSignInEmail(user.email, now, input.ip, input.userAgent));
    return s;
  });
  if (!session) {
    // The password was changed or reset while bcrypt ran: the one given is no longer the account's.
    await recordFailure(deps, attempt, clock.now());
    throw invalidCredentials();
  }
  deps.mailQueued();
  return { user: toUser(user), sessionToken: session.token, expiresAt: session.expiresAt };
}
