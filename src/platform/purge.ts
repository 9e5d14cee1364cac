import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';
import type { AnyDb } from './db.ts';
import type { Metrics } from './metrics.ts';

const BATCH = 1000;
const DAY = 86_400_000;
/** Sent emails are kept a week for support questions; failed ones a month, for a human to look at. */
const SENT_MAIL_RETENTION = 7 * DAY;
const FAILED_MAIL_RETENTION = 30 * DAY;

/**
 * Rows of one table to remove: those matching `condition` (given the time
 * and the service's context, e.g. its config), deleted by `key`.
 */
export interface PurgeTarget<Ctx> {
  table: string;
  /** The column that identifies a row; default `id`. */
  key?: string;
  // biome-ignore lint/suspicious/noExplicitAny: each target names its own table's columns
  condition: (eb: ExpressionBuilder<any, any>, now: number, ctx: Ctx) => Expression<SqlBool>;
}

/**
 * Deletes the targets' rows in batches of {@link BATCH} keys, so that a
 * table of millions of rows is never loaded or locked at once. Returns the
 * count removed per table; logs it and counts it in metrics.
 */
export async function purgeRows<Ctx>(
  deps: { db: AnyDb; clock: Clock; log: Logger; metrics: Metrics },
  targets: readonly PurgeTarget<Ctx>[],
  ctx: Ctx,
): Promise<Record<string, number>> {
  const now = deps.clock.now();
  const removed: Record<string, number> = {};
  for (const { table, key = 'id', condition } of targets) {
    let total = 0;
    for (;;) {
      const keys = deps.db
        .selectFrom(table)
        .select(key)
        .where((eb) => condition(eb, now, ctx))
        .limit(BATCH);
      const res = await deps.db.deleteFrom(table).where(key, 'in', keys).executeTakeFirst();
      const n = Number(res.numDeletedRows);
      total += n;
      if (n < BATCH) break;
    }
    removed[table] = total;
    if (total > 0) deps.metrics.purged.inc({ table }, total);
  }
  if (Object.values(removed).some((n) => n > 0)) deps.log.info({ removed }, 'purge finished');
  else deps.log.debug('purge finished: nothing to remove');
  return removed;
}

/** The outbox every service has: sent emails after a week, failed ones after a month. */
export const outboxPurgeTarget: PurgeTarget<unknown> & { table: 'outbox'; key?: undefined } = {
  table: 'outbox',
  condition: (eb, now) =>
    eb.or([
      eb('sent_at', '<', now - SENT_MAIL_RETENTION),
      eb.and([eb('status', '=', 'failed'), eb('created_at', '<', now - FAILED_MAIL_RETENTION)]),
    ]),
};
