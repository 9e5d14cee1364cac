import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { AuthConfig } from './config.ts';
import type { AuthDeps } from './deps.ts';

const BATCH = 1000;
const DAY = 86_400_000;
/** Sent emails are kept a week for support questions; failed ones a month, for a human to look at. */
const SENT_MAIL_RETENTION = 7 * DAY;
const FAILED_MAIL_RETENTION = 30 * DAY;
/** Failed sign-ins of an address stop counting a month after the last one (no lock in force). */
const LOGIN_FAILURE_RETENTION = 30 * DAY;
/** A revoked personal access token stays a while, so that revoking it again is still a 204. */
const REVOKED_PAT_RETENTION = 30 * DAY;

// biome-ignore lint/suspicious/noExplicitAny: each target names its own table's columns
type Condition = (eb: ExpressionBuilder<any, any>, now: number, config: AuthConfig) => Expression<SqlBool>;

type PurgeTable =
  | 'sessions'
  | 'verification_tokens'
  | 'password_reset_tokens'
  | 'outbox'
  | 'personal_access_tokens'
  | 'oauth_requests'
  | 'oauth_codes'
  | 'oauth_tokens'
  | 'oauth_families'
  | 'oauth_clients'
  | 'login_failures';

/**
 * What the purge removes: rows of each table matching its condition, by key.
 * Revoked and rotated refresh tokens stay until they expire, so that their
 * reuse is still recognised (an access token shares its refresh token's row);
 * a family goes once its last token row has gone.
 */
interface PurgeTarget {
  table: PurgeTable;
  key?: 'client_id' | 'address_hash' | 'refresh_hash';
  condition: Condition;
}

export const PURGE_TARGETS: PurgeTarget[] = [
  {
    table: 'sessions',
    condition: (eb, now) => eb.or([eb('expires_at', '<', now), eb('revoked_at', 'is not', null)]),
  },
  {
    table: 'verification_tokens',
    condition: (eb, now) => eb.or([eb('expires_at', '<', now), eb('used_at', 'is not', null)]),
  },
  {
    table: 'password_reset_tokens',
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
  {
    table: 'personal_access_tokens',
    condition: (eb, now) => eb.or([eb('expires_at', '<', now), eb('revoked_at', '<', now - REVOKED_PAT_RETENTION)]),
  },
  { table: 'oauth_requests', condition: (eb, now) => eb('expires_at', '<', now) },
  // Codes stay a day past their 10 minutes, so a late replay still revokes what the first use issued.
  { table: 'oauth_codes', condition: (eb, now) => eb('expires_at', '<', now - DAY) },
  { table: 'oauth_tokens', key: 'refresh_hash', condition: (eb, now) => eb('refresh_expires_at', '<', now) },
  {
    table: 'oauth_families',
    condition: (eb) => eb.not(eb.exists(eb.selectFrom('oauth_tokens as t').select('t.family_id').whereRef('t.family_id', '=', 'oauth_families.id'))),
  },
  {
    table: 'login_failures',
    key: 'address_hash',
    condition: (eb, now) =>
      eb.and([eb('updated_at', '<', now - LOGIN_FAILURE_RETENTION), eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)])]),
  },
  {
    table: 'oauth_clients',
    key: 'client_id',
    condition: (eb, now, config) =>
      eb.and([eb('last_token_at', 'is', null), eb('created_at', '<', now - (config.oauth?.unusedClientTtlMs ?? 30 * DAY))]),
  },
];

/**
 * Deletes expired and used rows in batches of {@link BATCH} ids, so that a
 * table of millions of rows is never loaded or locked at once. Returns the
 * count removed per table; logs it and counts it in metrics.
 */
export async function purgeExpired(
  deps: Pick<AuthDeps, 'db' | 'clock' | 'log' | 'metrics' | 'config'>,
  targets: readonly PurgeTarget[] = PURGE_TARGETS,
): Promise<Record<string, number>> {
  const now = deps.clock.now();
  const removed: Record<string, number> = {};
  for (const { table, key = 'id', condition } of targets) {
    let total = 0;
    for (;;) {
      const ids = deps.db
        .selectFrom(table)
        .select(key as 'id')
        .where((eb) => condition(eb, now, deps.config))
        .limit(BATCH);
      const res = await deps.db
        .deleteFrom(table)
        .where(key as 'id', 'in', ids)
        .executeTakeFirst();
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

/**
 * Pending authorization requests are written by an endpoint anyone can call,
 * so they are purged every minute (the `auth:purge-requests` job), not with
 * the hourly purge: expired ones stay at most a minute or so.
 */
export const PENDING_REQUEST_TARGETS = PURGE_TARGETS.filter((t) => t.table === 'oauth_requests');
