import { listApiKeys } from '../control-plane/api-keys.ts';
import type { GatewayDeps } from '../deps.ts';
import { LIMIT_FIELD, type Limits } from '../settings/limits.ts';
import { parseTenantSettings } from '../control-plane/tenant-settings.ts';
import { countersFor, type LimitScope } from './ledger.ts';

/** One limit and where its current window stands. */
export interface LimitUsage {
  limit: number;
  /** Settled consumption in the window (seeded from the usage records for tokens and USD). */
  used: number;
  /** Held by calls in flight (their estimates, until they settle). */
  reserved: number;
  remaining: number;
  window_start: string;
  resets_at: string;
}

export type LimitsUsage = Partial<Record<keyof Limits, LimitUsage>>;

export interface LimitsReport {
  tenant: { limits: Limits; usage: LimitsUsage };
  api_keys: { id: string; name: string; prefix: string; limits: Limits; usage: LimitsUsage }[];
}

/**
 * GET /api/v1/tenant/limits: the tenant's limits and each live key's, with
 * the consumption of every limit set in its current window, read from the
 * same ledger the data plane reserves in (shared across replicas through
 * Redis). A limit not set has no entry in `usage`.
 */
export async function limitsReport(deps: Pick<GatewayDeps, 'db' | 'clock' | 'budgets'>, tenantId: string): Promise<LimitsReport> {
  const now = deps.clock.now();
  const row = await deps.db.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirst();
  const tenantLimits = parseTenantSettings(row?.settings ?? '{}').limits ?? {};
  const keys = await listApiKeys(deps, tenantId);
  const usageOf = async (scope: LimitScope, keyId: string, limits: Limits): Promise<LimitsUsage> => {
    const counters = scope === 'key' ? countersFor(tenantId, keyId, limits, undefined, now) : countersFor(tenantId, keyId, undefined, limits, now);
    if (counters.length === 0) return {};
    const states = await deps.budgets.read(counters, now);
    const usage: LimitsUsage = {};
    counters.forEach((counter, i) => {
      const { used, reserved } = states[i]!;
      usage[LIMIT_FIELD[counter.kind]] = {
        limit: counter.limit,
        used,
        reserved,
        remaining: Math.max(0, counter.limit - used - reserved),
        window_start: new Date(counter.window.start).toISOString(),
        resets_at: new Date(counter.window.end).toISOString(),
      };
    });
    return usage;
  };
  return {
    tenant: { limits: tenantLimits, usage: await usageOf('tenant', '', tenantLimits) },
    api_keys: await Promise.all(
      keys.map(async (key) => ({ id: key.id, name: key.name, prefix: key.prefix, limits: key.limits, usage: await usageOf('key', key.id, key.limits) })),
    ),
  };
}
