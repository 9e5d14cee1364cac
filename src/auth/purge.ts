import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { AuthDeps } from './deps.ts';

const BATCH = 1000;
const DAY = 86_400_000;
/** Sent emails are kept a week for support questions; failed ones a month, for a human to look at. */
const SENT_MAIL_RETENTION = 7 * DAY;
const FAILED_MAIL_RETENTION = 30 * DAY;

// biome-ignore lint/suspicious/noExplicitAny: each target names its own table's columns
type Condition = (eb: ExpressionBuilder<any, any>, now: number) => Expression<SqlBool>;

/** What the purge removes: rows of each table matching its condition. Later features add their tables here. */
export const PURGE_TARGETS: { table: 'sessions' | 'verification_tokens' | 'outbox'; condition: Condition }[] = [
  {
    table: 'sessions',
    condition: (eb, now) => eb.or([eb('expires_at', '<', now), eb('revoked_at', 'is not', null)]),
  },
  {
    table: 'verification_tokens',
    condition: (eb, now) => eb.or([eb('expires_at', '<', now), eb('used_at', 'is not', null)]),
  },
  {
    table: 'outbox',
    condition: (eb, now) =>
      eb.or([
        eb('sent_at', '<', now - SENT_MAIL_RETENTION),
        eb.and([eb('status', '=', 'failed'), eb('created_at', '<', now - FAILED_MAIL_RETENTION)]),
      ]),
  },
];

/**
 * Deletes expired and used rows in batches of {@link BATCH} ids, so that a
 * table of millions of rows is never loaded or locked at once. Returns the
 * count removed per table; logs it and counts it in metrics.
 */
export async function purgeExpired(deps: Pick<AuthDeps, 'db' | 'clock' | 'log' | 'metrics'>): Promise<Record<string, number>> {
  const now = deps.clock.now();
  const removed: Record<string, number> = {};
  for (const { table, condition } of PURGE_TARGETS) {
    let total = 0;
    for (;;) {
      const ids = deps.db
        .selectFrom(table)
        .select('id')
        .where((eb) => condition(eb, now))
        .limit(BATCH);
      const res = await deps.db.deleteFrom(table).where('id', 'in', ids).executeTakeFirst();
      const n = Number(res.numDeletedRows);
      total += n;
      if (n < BATCH) break;
    }
    removed[table] = total;
    if (total > 0) deps.metrics.purged.inc({ table }, total);
  }
  deps.log.info({ removed }, 'purge finished');
  return removed;
}
