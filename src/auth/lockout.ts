import { sql } from 'kysely';
import type { AuthDeps } from './deps.ts';

/**
 * Counts a wrong password atomically (concurrent wrong guesses all count) and
 * locks the account when the count reaches AUTH_LOCKOUT_FAILURES; the count
 * starts over then. Password change uses it, so that a stolen session gives
 * no extra guesses at the password beyond what sign-in allows.
 * (The same rule as login.ts's recordFailure: to be folded into one home.)
 */
export async function recordPasswordFailure(deps: Pick<AuthDeps, 'db' | 'config' | 'log'>, userId: string, now: number): Promise<void> {
  const { maxFailures, lockMs } = deps.config.lockout;
  await deps.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('users')
      .set({ failed_logins: sql`failed_logins + 1`, updated_at: now })
      .where('id', '=', userId)
      .returning('failed_logins')
      .executeTakeFirst();
    if (row && row.failed_logins >= maxFailures) {
      await trx.updateTable('users').set({ failed_logins: 0, locked_until: now + lockMs }).where('id', '=', userId).execute();
      deps.log.warn({ userId }, 'account locked after repeated wrong passwords');
    }
  });
}
