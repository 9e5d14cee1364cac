import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { randomToken, sha256 } from '../platform/crypto.ts';
import { isUniqueViolation } from '../platform/db.ts';
import { fieldProblem, HttpProblem, tooManyRequests } from '../platform/errors.ts';
import type { RateLimiter } from '../platform/limits.ts';
import { enqueueEmail } from '../platform/mail.ts';
import type { AuthDeps } from './deps.ts';
import { normalizeEmail } from '../platform/email-address.ts';
import { verificationEmail } from './emails.ts';
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN, passwordLength } from './passwords.ts';
import { type AuthTables, toUser, type User } from './schema.ts';

export const VERIFICATION_PREFIX = 'vt_';

export function requireEmail(input: string): string {
  const email = normalizeEmail(input);
  if (!email) throw fieldProblem('invalid_email', 'email', 'The email address is not valid.');
  return email;
}

/** The password rules of registration, also applied by reset and change; `field` names the body field at fault. */
export function requirePassword(password: string, field = 'password'): void {
  const n = passwordLength(password);
  if (n < PASSWORD_MIN) {
    throw fieldProblem('password_too_short', field, `The password must be at least ${PASSWORD_MIN} characters.`);
  }
  if (n > PASSWORD_MAX) {
    throw fieldProblem('password_too_long', field, `The password must be at most ${PASSWORD_MAX} characters.`);
  }
}

/**
 * Stores a fresh single-use email token (verification, password reset) for a
 * user, only its SHA-256, in the caller's transaction; returns the token for the email.
 */
export async function insertEmailToken(
  db: Kysely<AuthTables>,
  table: 'verification_tokens' | 'password_reset_tokens',
  token: { prefix: string; userId: string; now: number; ttlMs: number },
): Promise<string> {
  const value = randomToken(token.prefix);
  await db
    .insertInto(table)
    .values({
      id: randomUUID(),
      user_id: token.userId,
      token_hash: sha256(value),
      created_at: token.now,
      expires_at: token.now + token.ttlMs,
      used_at: null,
    })
    .execute();
  return value;
}

/** Writes a fresh verification token and its email in the caller's transaction. */
async function issueVerification(deps: AuthDeps, db: Kysely<AuthTables>, userId: string, email: string): Promise<void> {
  const now = deps.clock.now();
  const token = await insertEmailToken(db, 'verification_tokens', {
    prefix: VERIFICATION_PREFIX,
    userId,
    now,
    ttlMs: deps.config.verificationTtlMs,
  });
  await enqueueEmail(db, deps.outbox, verificationEmail(deps.config, email, token));
}

/**
 * Creates an unverified account. The user row, its verification token and
 * the verification email commit together, before the caller answers 201.
 */
export async function register(deps: AuthDeps, input: { email: string; password: string; ip: string }): Promise<User> {
  const limit = await deps.limiters.register.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'register' });
    throw tooManyRequests('rate_limited', 'Too many sign-ups from this IP address; try again later.', limit.retryAfterMs);
  }
  const email = requireEmail(input.email);
  requirePassword(input.password);
  const passwordHash = await hashPassword(input.password, deps.config.bcryptCost);
  const now = deps.clock.now();
  const row = {
    id: randomUUID(),
    email,
    password_hash: passwordHash,
    email_verified_at: null,
    failed_logins: 0,
    locked_until: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await deps.db.transaction().execute(async (trx) => {
      await trx.insertInto('users').values(row).execute();
      await issueVerification(deps, trx, row.id, email);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new HttpProblem(409, 'email_taken', 'An account with this email address already exists.');
    throw err;
  }
  deps.mailQueued();
  return toUser(row);
}

/** Consumes a verification token (single use, within its lifetime) and marks the email verified. */
export async function verifyEmail(deps: AuthDeps, token: string): Promise<User> {
  const hash = sha256(token);
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('verification_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
    if (!row) throw new HttpProblem(400, 'invalid_token', 'The verification token is not valid.');
    if (row.used_at !== null) throw new HttpProblem(409, 'token_used', 'The verification token has already been used.');
    if (row.expires_at <= now) {
      throw new HttpProblem(410, 'token_expired', 'The verification token has expired; ask for a new email.');
    }
    // Conditional on used_at, so two concurrent uses cannot both succeed.
    const claimed = await trx
      .updateTable('verification_tokens')
      .set({ used_at: now })
      .where('id', '=', row.id)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) {
      throw new HttpProblem(409, 'token_used', 'The verification token has already been used.');
    }
    const user = await trx
      .updateTable('users')
      .set((eb) => ({ email_verified_at: eb.fn.coalesce('email_verified_at', eb.val(now)), updated_at: now }))
      .where('id', '=', row.user_id)
      .returning(['id', 'email', 'email_verified_at', 'created_at'])
      .executeTakeFirstOrThrow();
    return toUser(user);
  });
}

/**
 * The per-IP bucket, then the per-address one (mail bombing of one address
 * from many IPs), for endpoints that answer the same whatever happens: true
 * when either refuses, counted in metrics, never told to the caller.
 */
export async function silentlyLimited(
  deps: Pick<AuthDeps, 'metrics'>,
  [byIp, byAddress]: [RateLimiter, RateLimiter],
  ip: string,
  email: string,
  bucket: string,
): Promise<boolean> {
  const ipResult = await byIp.consume(ip);
  const result = ipResult.allowed ? await byAddress.consume(email) : ipResult;
  if (result.allowed) return false;
  deps.metrics.rateLimited.inc({ bucket });
  return true;
}

/**
 * Sends a fresh verification email to an existing unverified account. The
 * caller answers the same whatever happens here, so the reply tells nothing
 * about which addresses have accounts; limits apply silently.
 */
export async function resendVerification(deps: AuthDeps, input: { email: string; ip: string }): Promise<void> {
  const email = requireEmail(input.email);
  if (await silentlyLimited(deps, [deps.limiters.resend, deps.limiters.resendPerEmail], input.ip, email, 'resend')) return;
  const queued = await deps.db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').select(['id', 'email_verified_at']).where('email', '=', email).executeTakeFirst();
    if (!user || user.email_verified_at !== null) return false;
    await issueVerification(deps, trx, user.id, email);
    return true;
  });
  if (queued) deps.mailQueued();
}
