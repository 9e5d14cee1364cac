import { sql } from 'kysely';
import { sha256 } from '../platform/crypto.ts';
import type { AuthDeps } from './deps.ts';
import type { AuthDb } from './schema.ts';

/**
 * Failed sign-ins counted per email address, whether or not an account has
 * it, in the database (so replicas share the count):
 *
 *   login_failures(address_hash PK, failures, locked_until, updated_at)
 *
 * `address_hash` is the SHA-256 of the normalised address: the table also
 * holds addresses people mistyped, which need not be readable. The rule is
 * the account lock's (AUTH_LOCKOUT_FAILURES consecutive failures lock the
 * address for AUTH_LOCKOUT_MINUTES, the count starting over then), so the
 * public sign-in page, which decides by this count alone, answers the same for
 * an address with an account and one without (defect 7: a lock only known
 * addresses reached told which addresses have accounts). The account's own
 * count in `users` is kept beside it for POST /v1/login's documented
 * `account_locked`; every failure counts in both, in one transaction.
 */

export const addressKey = (email: string) => sha256(email);

/** Milliseconds the address stays locked; 0 when it is not. */
export async function addressLockedFor(db: AuthDb, address: string, now: number): Promise<number> {
  const row = await db.selectFrom('login_failures').select('locked_until').where('address_hash', '=', address).executeTakeFirst();
  return row?.locked_until != null && row.locked_until > now ? row.locked_until - now : 0;
}

/**
 * Counts one failure for the address and, when `userId` is set, for the
 * account; each is locked when its count reaches the limit. The same
 * statements run whether or not the account exists (the update of `users`
 * then matches no row), so both cost the same time. Concurrent failures all
 * count: each is an atomic increment.
 */
export async function recordFailure(deps: Pick<AuthDeps, 'db' | 'config' | 'log'>, address: string, userId: string | undefined, now: number): Promise<void> {
  const { maxFailures, lockMs } = deps.config.lockout;
  await deps.db.transaction().execute(async (trx) => {
    const counted = await trx
      .insertInto('login_failures')
      .values({ address_hash: address, failures: 1, locked_until: null, updated_at: now })
      .onConflict((oc) => oc.column('address_hash').doUpdateSet({ failures: sql`login_failures.failures + 1`, updated_at: now }))
      .returning('failures')
      .executeTakeFirstOrThrow();
    if (counted.failures >= maxFailures) {
      await trx.updateTable('login_failures').set({ failures: 0, locked_until: now + lockMs }).where('address_hash', '=', address).execute();
    }
    const account = await trx
      .updateTable('users')
      .set({ failed_logins: sql`failed_logins + 1`, updated_at: now })
      .where('id', '=', userId ?? '')
      .returning('failed_logins')
      .executeTakeFirst();
    if (account && account.failed_logins >= maxFailures) {
      await trx.updateTable('users').set({ failed_logins: 0, locked_until: now + lockMs }).where('id', '=', userId ?? '').execute();
      deps.log.warn({ userId }, 'account locked after repeated failed sign-ins');
    }
  });
}

/** After a successful sign-in: the address starts from zero again. */
export async function clearAddressFailures(db: AuthDb, address: string): Promise<void> {
  await db.deleteFrom('login_failures').where('address_hash', '=', address).execute();
}
