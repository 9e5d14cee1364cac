import { outboxPurgeTarget, type PurgeTarget, purgeRows } from '../platform/purge.ts';
import type { GatewayConfig } from './config.ts';
import type { GatewayDeps } from './deps.ts';

const DAY = 86_400_000;

/**
 * What the gateway's purge removes. A used or expired magic link stays a day,
 * so that a second click still hears "already used" rather than "unknown".
 * Usage records (and bodies a tenant chose to store) go after
 * GATEWAY_USAGE_RETENTION_DAYS.
 */
export const GATEWAY_PURGE_TARGETS: readonly PurgeTarget<GatewayConfig>[] = [
  { table: 'gateway_sessions', key: 'token_hash', condition: (eb, now) => eb('expires_at', '<', now) },
  { table: 'magic_links', key: 'token_hash', condition: (eb, now) => eb('expires_at', '<', now - DAY) },
  outboxPurgeTarget,
  { table: 'usage_records', key: 'request_id', condition: (eb, now, config) => eb('created_at', '<', now - config.usage.retentionMs) },
];

export function purgeGateway(deps: Pick<GatewayDeps, 'db' | 'clock' | 'log' | 'metrics' | 'config'>): Promise<Record<string, number>> {
  return purgeRows(deps, GATEWAY_PURGE_TARGETS, deps.config);
}
