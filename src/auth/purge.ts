import { outboxPurgeTarget, type PurgeTarget as PlatformPurgeTarget, purgeRows } from '../platform/purge.ts';
import type { AuthConfig } from './config.ts';
import type { AuthDeps } from './deps.ts';

const DAY = 86_400_000;
/** Failed sign-ins of an address stop counting a month after the last one (no lock in force). */
const LOGIN_FAILURE_RETENTION = 30 * DAY;
/** A revoked personal access token stays a while, so that revoking it again is still a 204. */
const REVOKED_PAT_RETENTION = 30 * DAY;

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
type PurgeTarget = PlatformPurgeTarget<AuthConfig> & { table: PurgeTable; key?: 'client_id' | 'address_hash' | 'refresh_hash' };

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
  outboxPurgeTarget,
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

/** Deletes expired and used rows of the account service (platform purgeRows: bounded batches). */
export function purgeExpired(
  deps: Pick<AuthDeps, 'db' | 'clock' | 'log' | 'metrics' | 'config'>,
  targets: readonly PurgeTarget[] = PURGE_TARGETS,
): Promise<Record<string, number>> {
  return purgeRows(deps, targets, deps.config);
}

/**
 * Pending authorization requests are written by an endpoint anyone can call,
 * so they are purged every minute (the `auth:purge-requests` job), not with
 * the hourly purge: expired ones stay at most a minute or so.
 */
export const PENDING_REQUEST_TARGETS = PURGE_TARGETS.filter((t) => t.table === 'oauth_requests');
