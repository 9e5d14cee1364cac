import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import { fieldProblem } from '../../platform/errors.ts';
import type { GatewayTables } from '../schema.ts';

/**
 * The filters shared by the usage totals and the request log. Times are
 * `from` (inclusive) to `to` (exclusive), each ISO 8601 (`2026-01-31`,
 * `2026-01-31T12:00:00Z`) or epoch milliseconds (`1767225600000`); by
 * default the 30 days up to now. `model` matches the model asked for or
 * the `provider/model` that answered.
 */
export interface UsageFilter {
  tenantId: string;
  from: number;
  to: number;
  tag?: string | undefined;
  sessionId?: string | undefined;
  model?: string | undefined;
  keyId?: string | undefined;
}

export interface UsageQuery {
  from?: string | undefined;
  to?: string | undefined;
  tag?: string | undefined;
  session_id?: string | undefined;
  model?: string | undefined;
  key_id?: string | undefined;
}

export const DAY_MS = 86_400_000;
const DEFAULT_RANGE_MS = 30 * DAY_MS;

/** A time as ISO 8601 (with a date at least) or as epoch milliseconds; undefined when absent; 400 naming the field otherwise. */
export function parseTime(value: string | undefined, field: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = /^\d{1,15}$/.test(value) ? Number(value) : /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw fieldProblem('invalid_time', field, `${field} must be an ISO 8601 time (2026-01-31T00:00:00Z) or epoch milliseconds.`);
  }
  return ms;
}

export function usageFilter(tenantId: string, query: UsageQuery, now: number): UsageFilter {
  const to = parseTime(query.to, 'to') ?? now;
  const from = parseTime(query.from, 'from') ?? to - DEFAULT_RANGE_MS;
  if (from > to) throw fieldProblem('invalid_range', 'from', 'from must not be later than to.');
  return { tenantId, from, to, tag: query.tag, sessionId: query.session_id, model: query.model, keyId: query.key_id };
}

/** The filter as one WHERE condition; the tenant first, always. */
export function usageWhere(filter: UsageFilter) {
  return (eb: ExpressionBuilder<GatewayTables, 'usage_records'>): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [
      eb('tenant_id', '=', filter.tenantId),
      eb('created_at', '>=', filter.from),
      eb('created_at', '<', filter.to),
    ];
    if (filter.tag !== undefined) conditions.push(eb('tag', '=', filter.tag));
    if (filter.sessionId !== undefined) conditions.push(eb('session_id', '=', filter.sessionId));
    if (filter.keyId !== undefined) conditions.push(eb('key_id', '=', filter.keyId));
    if (filter.model !== undefined) conditions.push(eb.or([eb('model_used', '=', filter.model), eb('model_requested', '=', filter.model)]));
    return eb.and(conditions);
  };
}
