import { type Kysely, type RawBuilder, sql } from 'kysely';
import { sha256 } from '../platform/crypto.ts';
import type { AuthConfig } from './config.ts';
import type { AuthDeps } from './deps.ts';
import type { AuthTables } from './schema.ts';

/**
 * Sign-in attempts and failures, counted per email address whether or not an
 * account has it, and per account, in the database (so replicas share them):
 *
 *   login_failures(address_hash PK, failures, locked_until, pending, pending_until, updated_at)
 *   users(..., failed_logins, locked_until, pending_logins, pending_logins_until)
 *
 * `address_hash` is the SHA-256 of the normalised address: the table also
 * holds addresses people mistyped, which need not be readable. The rule is
 * the same for both counts (AUTH_LOCKOUT_FAILURES consecutive failures lock
 * for AUTH_LOCKOUT_MINUTES, the count starting over then). The public sign-in
 * page decides by the address's count alone, so it answers the same for an
 * address with an account and one without (defect 7 of issue 6); POST
 * /v1/login and the password change decide by the account's, for their
 * documented `account_locked`.
 *
 * An attempt is taken before bcrypt runs, not counted after (issue 31, A2:
 * 39 wrong passwords sent at once were all checked, since each read the lock
 * before any failure was recorded). Taking is one conditional update per
 * count: it adds the attempt to `pending` only if the count is not locked and
 * failures plus attempts under way stay below the limit, so however many
 * arrive at once, at most the limit are checked; the others are refused
 * before bcrypt. The attempt then settles: a failure moves it from `pending`
 * to `failures` (locking at the limit); a success clears the failures and
 * the lock and ends its attempt, leaving other attempts under way counted, so
 * a success racing wrong guesses gives them no extra room; a right password
 * that cannot sign in (unverified address) just ends its attempt. A count of
 * attempts under way lapses ATTEMPT_TTL_MS after the last one was taken, so a
 * process that dies in the middle of a sign-in cannot hold an address's
 * allowance for longer.
 */

export const addressKey = (email: string) => sha256(email);

/** How long attempts under way keep their place without settling (bcrypt takes well under a second). */
export const ATTEMPT_TTL_MS = 60_000;

/** Past the allowance but not locked: attempts under way fill it, and settle within a bcrypt time. */
const UNDER_WAY_RETRY_MS = 1000;

/** One sign-in (or password change) attempt: which counts it holds a place in. */
export interface Attempt {
  address: string;
  userId: string | undefined;
  /** The address's count had room and holds this attempt. */
  heldAddress: boolean;
  /** The account exists, its count had room and holds this attempt. */
  heldAccount: boolean;
}

type Lockout = AuthConfig['lockout'];
type Db = Kysely<AuthTables>;

/** Attempts under way that still count: none once the last one taken has lapsed. */
const live = (pending: string, until: string, now: number): RawBuilder<number> =>
  sql<number>`(CASE WHEN ${sql.ref(until)} IS NULL OR ${sql.ref(until)} <= ${now} THEN 0 ELSE ${sql.ref(pending)} END)`;

/** One attempt fewer under way (never below zero: a lapsed count may have been started over meanwhile). */
const ended = (pending: string): RawBuilder<number> => sql<number>`(CASE WHEN ${sql.ref(pending)} > 0 THEN ${sql.ref(pending)} - 1 ELSE 0 END)`;

/**
 * Takes an attempt in the account's count (when `userId` is set) and the
 * address's, each only if it has room. The caller decides, by its surface,
 * which count must hold the attempt, and throws inside its transaction to
 * take nothing when that one has no room. The same statements run whether
 * or not the account exists (the update of `users` then matches no row).
 */
export async function takeAttempt(trx: Db, lockout: Lockout, address: string, userId: string | undefined, now: number): Promise<Attempt> {
  const until = now + ATTEMPT_TTL_MS;
  const account = await trx
    .updateTable('users')
    .set({ pending_logins: sql`${live('pending_logins', 'pending_logins_until', now)} + 1`, pending_logins_until: until })
    .where('id', '=', userId ?? '')
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
    .where(sql<boolean>`failed_logins + ${live('pending_logins', 'pending_logins_until', now)} < ${lockout.maxFailures}`)
    .returning('id')
    .executeTakeFirst();
  const addressPending = live('login_failures.pending', 'login_failures.pending_until', now);
  const addressRow = await trx
    .insertInto('login_failures')
    .values({ address_hash: address, failures: 0, locked_until: null, pending: 1, pending_until: until, updated_at: now })
    .onConflict((oc) =>
      oc
        .column('address_hash')
        .doUpdateSet({ pending: sql`${addressPending} + 1`, pending_until: until, updated_at: now })
        .where((eb) => eb.or([eb('login_failures.locked_until', 'is', null), eb('login_failures.locked_until', '<=', now)]))
        .where(sql<boolean>`login_failures.failures + ${addressPending} < ${lockout.maxFailures}`),
    )
    .returning('address_hash')
    .executeTakeFirst();
  return { address, userId, heldAddress: addressRow !== undefined, heldAccount: account !== undefined };
}

/** Milliseconds until a count that held no place may be tried again: the lock's rest, or a second while attempts under way fill it. */
export async function waitFor(db: Db, count: 'address' | 'account', attempt: Attempt, now: number): Promise<number> {
  const row =
    count === 'address'
      ? await db.selectFrom('login_failures').select('locked_until').where('address_hash', '=', attempt.address).executeTakeFirst()
      : await db.selectFrom('users').select('locked_until').where('id', '=', attempt.userId ?? '').executeTakeFirst();
  return row?.locked_until != null && row.locked_until > now ? row.locked_until - now : UNDER_WAY_RETRY_MS;
}

/**
 * Settles an attempt as a failure: in each count that holds it, the attempt
 * becomes a failure, and the failure that reaches the limit locks. Both
 * statements run for every attempt, keyed on nothing when a count does not
 * hold it, so an unknown address costs what a known one does.
 */
export async function recordFailure(deps: Pick<AuthDeps, 'db' | 'config' | 'log'>, attempt: Attempt, now: number): Promise<void> {
  const { maxFailures, lockMs } = deps.config.lockout;
  const lockUntil = now + lockMs;
  await deps.db.transaction().execute(async (trx) => {
    const account = await trx
      .updateTable('users')
      .set({
        failed_logins: sql`CASE WHEN failed_logins + 1 >= ${maxFailures} THEN 0 ELSE failed_logins + 1 END`,
        locked_until: sql`CASE WHEN failed_logins + 1 >= ${maxFailures} THEN ${lockUntil} ELSE locked_until END`,
        pending_logins: ended('pending_logins'),
        updated_at: now,
      })
      .where('id', '=', attempt.heldAccount ? (attempt.userId ?? '') : '')
      .returning('locked_until')
      .executeTakeFirst();
    await trx
      .updateTable('login_failures')
      .set({
        failures: sql`CASE WHEN failures + 1 >= ${maxFailures} THEN 0 ELSE failures + 1 END`,
        locked_until: sql`CASE WHEN failures + 1 >= ${maxFailures} THEN ${lockUntil} ELSE locked_until END`,
        pending: ended('pending'),
        updated_at: now,
      })
      .where('address_hash', '=', attempt.heldAddress ? attempt.address : '')
      .execute();
    if (account?.locked_until === lockUntil) deps.log.warn({ userId: attempt.userId }, 'account locked after repeated failed sign-ins');
  });
}

/** Ends an attempt that was neither a failure nor a sign-in (the right password of an unverified account). */
export async function releaseAttempt(db: Db, attempt: Attempt): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('users')
      .set({ pending_logins: ended('pending_logins') })
      .where('id', '=', attempt.heldAccount ? (attempt.userId ?? '') : '')
      .execute();
    await trx
      .updateTable('login_failures')
      .set({ pending: ended('pending') })
      .where('address_hash', '=', attempt.heldAddress ? attempt.address : '')
      .execute();
  });
}

/**
 * The account's columns after a success (or a new password): no failures, no
 * lock, and the attempt that succeeded ended; other attempts under way stay
 * counted. For an update of `users` that the caller makes conditional.
 */
export function clearedAccount(heldAccount: boolean) {
  return { failed_logins: 0, locked_until: null, ...(heldAccount ? { pending_logins: ended('pending_logins') } : {}) };
}

/**
 * After a success, a reset or a change: the address starts from zero again;
 * `held` ends the caller's own attempt. The row goes once nothing is under
 * way, as it did before attempts were counted.
 */
export async function clearAddressFailures(db: Db, address: string, held = false): Promise<void> {
  await db
    .updateTable('login_failures')
    .set({ failures: 0, locked_until: null, ...(held ? { pending: ended('pending') } : {}) })
    .where('address_hash', '=', address)
    .execute();
  await db.deleteFrom('login_failures').where('address_hash', '=', address).where('pending', '=', 0).execute();
}
