import { type ExpressionBuilder, sql } from 'kysely';
import { outboxPurgeTarget, type PurgeTarget, purgeRows } from '../../platform/purge.ts';
import type { GatewayConfig } from '../config.ts';
import type { GatewayDeps } from '../deps.ts';
import type { GatewayTables } from '../schema.ts';
import { storedBodyBytesPurgeTarget } from './stored-body-bytes.ts';
import { GRAIN_MS, LATENCY_ROLLUPS, periodColumn, ROLLUPS } from './usage-rollups.ts';

const DAY = 86_400_000;

/**
 * What the gateway's purge removes. A used or expired magic link stays a day,
 * so that a second click still hears "already used" rather than "unknown".
 * Usage records (and bodies a tenant chose to store) go after
 * GATEWAY_USAGE_RETENTION_DAYS, and the usage rollups (usage-rollups.ts)
 * with them, an hour (or a day) once all of it is older than that: until
 * then the hour or day the retention cuts still counts its records purged
 * already. A revoked API key goes as long after its revocation: by then no
 * record names it (the request log lists revoked keys that records name),
 * and a workspace's revoked keys are bounded by their creation rate times
 * the retention. A stored response (the Responses API's state,
 * surfaces/responses/store.ts) goes once its tenant's retention for it has
 * passed (its `expires_at`; no reader sees it after that).
 */
export const GATEWAY_PURGE_TARGETS: readonly PurgeTarget<GatewayConfig>[] = [
  { table: 'gateway_sessions', key: 'token_hash', condition: (eb, now) => eb('expires_at', '<', now) },
  { table: 'magic_links', key: 'token_hash', condition: (eb, now) => eb('expires_at', '<', now - DAY) },
  outboxPurgeTarget,
  { table: 'usage_records', key: 'request_id', condition: (eb, now, config) => eb('created_at', '<', now - config.usage.retentionMs) },
  { table: 'api_keys', condition: (eb, now, config) => eb('revoked_at', '<', now - config.usage.retentionMs) },
  storedBodyBytesPurgeTarget,
  // expires_at as the key: the condition is on it alone (every row of a chosen time meets it), and its index finds them.
  { table: 'stored_responses', key: 'expires_at', condition: (eb, now) => eb('expires_at', '<', now) },
  ...[...ROLLUPS, ...LATENCY_ROLLUPS].map(({ table, grain }) => ({
    table,
    // The hour (or day) as the key: the condition is on it alone, so every row of a chosen hour meets it.
    key: periodColumn(grain),
    condition: (eb: ExpressionBuilder<GatewayTables, keyof GatewayTables>, now: number, config: GatewayConfig) =>
      eb(sql.ref(periodColumn(grain)), '<', Math.floor((now - config.usage.retentionMs) / GRAIN_MS[grain])),
  })),
];

export function purgeGateway(deps: Pick<GatewayDeps, 'db' | 'clock' | 'log' | 'metrics' | 'config'>): Promise<Record<string, number>> {
  return purgeRows(deps, GATEWAY_PURGE_TARGETS, deps.config);
}
