import { type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool, sql } from 'kysely';
import { fieldProblem } from '../../platform/errors.ts';
import type { GatewayDeps } from '../deps.ts';
import type { GatewayTables, UsageMeasures } from '../schema.ts';
import { DAY_MS, type UsageFilter, usageWhere } from './usage-filters.ts';
import {
  HOUR_MS,
  histogramQuantile,
  LATENCY_BUCKETS,
  LATENCY_ROLLUPS,
  latencyBucket,
  MEASURES,
  MEASURES_SQL,
  periodColumn,
  ROLLUPS,
  type RollupLabel,
  type RollupSpec,
} from './usage-rollups.ts';

/**
 * GET /api/v1/tenant/usage and the console's Overview and Usage pages:
 * totals over the usage records a filter selects, optionally grouped, and
 * latency percentiles. Read from the usage rollups (usage-rollups.ts): the
 * whole days of the range from the daily tables, the whole hours from the
 * hourly ones, and the parts of an hour at either end from the records
 * themselves (at most two hours of records): exact for any range, and a few
 * thousand rollup rows for a month of a busy tenant.
 */
export type UsageGroupBy = 'tag' | 'session' | 'model' | 'model_requested' | 'key' | 'day' | 'hour';

export interface UsageTotals {
  requests: number;
  /** Calls answered with a status of 400 or more. */
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_saved: number;
  cost_usd: number;
  cost_saved_usd: number;
  /** What the same calls would have cost without the gateway: cost_usd + cost_saved_usd. */
  cost_without_gateway_usd: number;
  /** Cache hits (each the whole cost of the answer reused). */
  saved_cache_usd: number;
  /** In-flight dedups (likewise). */
  saved_dedup_usd: number;
  saved_compaction_usd: number;
  saved_routing_usd: number;
  /** What the prompt-cache breakpoints the gateway added earned. */
  saved_prompt_cache_usd: number;
  /**
   * What the provider's own prompt caching saved that the gateway does not
   * claim: outside cost_saved_usd and cost_without_gateway_usd.
   */
  saved_provider_cache_usd: number;
  cache_hits: number;
  dedup_hits: number;
  cache_misses: number;
  /** (cache_hits + dedup_hits) / (cache_hits + dedup_hits + cache_misses); null when no call could use the cache. */
  cache_hit_rate: number | null;
}

export interface Percentiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

/** Milliseconds, estimated from the latency buckets (10 a decade): within the true value's bucket, at most 26% off. */
export interface LatencyReport {
  calls: number;
  /** What the client waited: the gateway's overhead plus the provider's time. */
  total_ms: Percentiles;
  /** The gateway's own part. */
  overhead_ms: Percentiles;
}

export interface UsageGroup extends UsageTotals {
  /** The group: null for records without a tag or session; a day `2026-03-01`; an hour `2026-03-01T13:00:00.000Z`. */
  key: string | null;
  /** group_by=key: the key's name (null for a key no longer stored). */
  name?: string | null;
}

export interface UsageReport {
  from: string;
  to: string;
  totals: UsageTotals;
  /** Present when grouped: the largest by cost first (times in order), at most {@link MAX_GROUPS}. */
  groups?: UsageGroup[];
  /** Over the whole workspace's calls: null when a tag, session, model or key filter is given (the buckets keep no labels). */
  latency: LatencyReport | null;
}

/** Most groups returned (the largest by cost first). */
export const MAX_GROUPS = 1000;
/** Longest range an hourly grouping covers. */
export const MAX_HOURLY_DAYS = 31;

type Measure = keyof UsageMeasures;
type Row = Record<string, unknown>;

const GROUP_LABELS: Record<UsageGroupBy, readonly RollupLabel[]> = {
  tag: ['tag'],
  session: ['session_id'],
  model: ['model_requested', 'model_used'],
  model_requested: ['model_requested'],
  key: ['key_id'],
  day: [],
  hour: [],
};

/** The group as SQL over a rollup table (labels '' for none) of each grain, and over usage_records (NULL for none). */
const GROUP_SQL: Record<UsageGroupBy, { hour: RawBuilder<unknown>; day: RawBuilder<unknown>; records: RawBuilder<unknown> }> = {
  tag: { hour: sql`nullif(tag, '')`, day: sql`nullif(tag, '')`, records: sql`tag` },
  session: { hour: sql`nullif(session_id, '')`, day: sql`nullif(session_id, '')`, records: sql`session_id` },
  key: { hour: sql`key_id`, day: sql`key_id`, records: sql`key_id` },
  // The model that answered, else the one asked for.
  model: {
    hour: sql`case when model_used = '' then model_requested else model_used end`,
    day: sql`case when model_used = '' then model_requested else model_used end`,
    records: sql`coalesce(model_used, model_requested)`,
  },
  // The model as the client named it (an alias's name, `auto`), whatever answered.
  model_requested: { hour: sql`model_requested`, day: sql`model_requested`, records: sql`model_requested` },
  // Integer division of non-negative numbers: the floor, in UTC, the same on SQLite and PostgreSQL.
  day: { hour: sql`hour / 24`, day: sql`day`, records: sql`created_at / ${sql.lit(DAY_MS)}` },
  // Never read from a daily table (see plan).
  hour: { hour: sql`hour`, day: sql`null`, records: sql`created_at / ${sql.lit(HOUR_MS)}` },
};

/** The labels a filter narrows by. */
function filterLabels(filter: UsageFilter): RollupLabel[] {
  const labels: RollupLabel[] = [];
  if (filter.tag !== undefined) labels.push('tag');
  if (filter.sessionId !== undefined) labels.push('session_id');
  if (filter.model !== undefined) labels.push('model_requested', 'model_used');
  if (filter.keyId !== undefined) labels.push('key_id');
  return labels;
}

/** A part of a range read from one rollup table: its periods (hours or days since the epoch) [first, end). */
interface RollupPart {
  spec: RollupSpec;
  first: number;
  end: number;
}

/** A range cut into whole days, whole hours and the rest; `daily` false: no days (hours instead). */
export function splitRange(from: number, to: number, daily: boolean): { days: [number, number] | undefined; hours: [number, number][]; records: [number, number][] } {
  const hours: [number, number][] = [];
  const records: [number, number][] = [];
  const byHour = (a: number, b: number) => {
    const first = Math.ceil(a / HOUR_MS);
    const end = Math.floor(b / HOUR_MS);
    if (first >= end) {
      if (a < b) records.push([a, b]);
      return;
    }
    hours.push([first, end]);
    if (a < first * HOUR_MS) records.push([a, first * HOUR_MS]);
    if (end * HOUR_MS < b) records.push([end * HOUR_MS, b]);
  };
  const first = Math.ceil(from / DAY_MS);
  const end = Math.floor(to / DAY_MS);
  if (!daily || first >= end) {
    byHour(from, to);
    return { days: undefined, hours, records };
  }
  byHour(from, first * DAY_MS);
  byHour(end * DAY_MS, to);
  return { days: [first, end], hours, records };
}

/**
 * Where a query reads a range from: the smallest set of rollup tables that
 * keeps every label it needs, whole days from its daily table (when it has
 * one and the query does not group by hour), whole hours from its hourly
 * table, the rest (at most an hour at either end) from the records.
 */
function plan(family: readonly RollupSpec[], from: number, to: number, hourly: boolean): { parts: RollupPart[]; records: [number, number][] } {
  const hour = family.find((t) => t.grain === 'hour')!;
  const day = hourly ? undefined : family.find((t) => t.grain === 'day');
  const { days, hours, records } = splitRange(from, to, day !== undefined);
  const parts: RollupPart[] = hours.map(([first, end]) => ({ spec: hour, first, end }));
  if (days && day) parts.push({ spec: day, first: days[0], end: days[1] });
  return { parts, records };
}

/** The rollup tables of the smallest set of labels that holds `labels`, each grain. */
function familyFor(labels: readonly RollupLabel[]): RollupSpec[] {
  const fits = (t: RollupSpec) => labels.every((l) => t.labels.includes(l));
  const smallest = ROLLUPS.find(fits)!;
  return ROLLUPS.filter((t) => t.labels.length === smallest.labels.length);
}

type RollupEb = ExpressionBuilder<GatewayTables, 'usage_rollup_sessions'>;

/** The filter over a rollup table's part; tenant first, always. */
function rollupWhere(filter: UsageFilter, part: RollupPart) {
  const period = sql.ref(periodColumn(part.spec.grain));
  return (eb: RollupEb): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb('tenant_id', '=', filter.tenantId), eb(period, '>=', part.first), eb(period, '<', part.end)];
    if (filter.tag !== undefined) conditions.push(eb('tag', '=', filter.tag));
    if (filter.sessionId !== undefined) conditions.push(eb('session_id', '=', filter.sessionId));
    if (filter.keyId !== undefined) conditions.push(eb('key_id', '=', filter.keyId));
    if (filter.model !== undefined) conditions.push(eb.or([eb('model_used', '=', filter.model), eb('model_requested', '=', filter.model)]));
    return eb.and(conditions);
  };
}

/**
 * One query over the rollup rows and the records of a range, each part
 * projected to the same columns (the group, then the measures), summed per
 * group outside. `groupBy` undefined: one row of totals.
 */
function summed(deps: Pick<GatewayDeps, 'db'>, filter: UsageFilter, groupBy: UsageGroupBy | undefined) {
  const { db } = deps;
  const family = familyFor([...filterLabels(filter), ...(groupBy ? GROUP_LABELS[groupBy] : [])]);
  // One session's calls are few (a conversation), and usage_records has an index of each tenant's sessions
  // (usage_records_tenant_session, migration 0007): they are read directly, at any size of the rest.
  const { parts, records } = filter.sessionId !== undefined ? { parts: [], records: [[filter.from, filter.to] as [number, number]] } : plan(family, filter.from, filter.to, groupBy === 'hour');
  const group = groupBy ? GROUP_SQL[groupBy] : { hour: sql`0`, day: sql`0`, records: sql`0` };
  const fromRecords = (where: Parameters<typeof usageWhere>[0] | undefined) =>
    db
      .selectFrom('usage_records')
      .select([group.records.as('g'), ...MEASURES.map((m) => MEASURES_SQL[m].as(m))])
      .where(where ? usageWhere(where) : sql<SqlBool>`1 = 0`);
  const queries = [
    // Every rollup table has the columns asked of it here; the type of the widest one stands for all.
    ...parts.map((part) =>
      db
        .selectFrom(part.spec.table as 'usage_rollup_sessions')
        .select((eb) => [group[part.spec.grain].as('g'), ...MEASURES.map((m) => eb.ref(m).$castTo<number>().as(m))])
        .where(rollupWhere(filter, part)),
    ),
    ...records.map(([from, to]) => fromRecords({ ...filter, from, to })),
  ];
  // An empty range still answers one row of zeros.
  if (queries.length === 0) queries.push(fromRecords(undefined));
  const union = queries.slice(1).reduce((all, q) => all.unionAll(q), queries[0]!);
  return db
    .selectFrom(union.as('u'))
    .select((eb) => MEASURES.map((m) => eb.fn.coalesce(eb.fn.sum<number>(`u.${m}` as `u.${Measure}`), eb.lit(0)).as(m)))
    .$if(groupBy !== undefined, (q) => q.select('u.g as group_key'));
}

function toTotals(row: Row): UsageTotals {
  const n = (m: Measure) => Number(row[m] ?? 0);
  const served = n('cache_hits') + n('dedup_hits');
  return {
    requests: n('requests'),
    errors: n('errors'),
    prompt_tokens: n('prompt_tokens'),
    completion_tokens: n('completion_tokens'),
    tokens_saved: n('saved_tokens'),
    cost_usd: n('cost_usd'),
    cost_saved_usd: n('cost_saved_usd'),
    cost_without_gateway_usd: n('cost_usd') + n('cost_saved_usd'),
    saved_cache_usd: n('saved_cache_usd'),
    saved_dedup_usd: n('saved_dedup_usd'),
    saved_compaction_usd: n('saved_compaction_usd'),
    saved_routing_usd: n('saved_routing_usd'),
    saved_prompt_cache_usd: n('saved_prompt_cache_usd'),
    saved_provider_cache_usd: n('saved_provider_cache_usd'),
    cache_hits: n('cache_hits'),
    dedup_hits: n('dedup_hits'),
    cache_misses: n('cache_misses'),
    cache_hit_rate: served + n('cache_misses') === 0 ? null : served / (served + n('cache_misses')),
  };
}

/** The group's name as the API gives it: a day or an hour as a date, a label as itself. */
function groupName(groupBy: UsageGroupBy, raw: unknown): string | null {
  if (groupBy === 'day') return new Date(Number(raw) * DAY_MS).toISOString().slice(0, 10);
  if (groupBy === 'hour') return new Date(Number(raw) * HOUR_MS).toISOString();
  return raw === null || raw === undefined ? null : String(raw);
}

export async function usageReport(deps: Pick<GatewayDeps, 'db'>, filter: UsageFilter, groupBy: UsageGroupBy | undefined): Promise<UsageReport> {
  if (groupBy === 'hour' && filter.to - filter.from > MAX_HOURLY_DAYS * DAY_MS) {
    throw fieldProblem('range_too_long', 'group_by', `group_by=hour covers at most ${MAX_HOURLY_DAYS} days; group a longer range by day.`);
  }
  // Tags, sessions, models and key ids are never empty: an empty filter selects nothing (the rollups keep none as '').
  const none = [filter.tag, filter.sessionId, filter.model, filter.keyId].includes('');
  const [totalsRow, latency] = await Promise.all([
    none ? {} : summed(deps, filter, undefined).executeTakeFirstOrThrow(),
    none || filterLabels(filter).length > 0 ? null : latencyReport(deps, filter),
  ]);
  const report: UsageReport = {
    from: new Date(filter.from).toISOString(),
    to: new Date(filter.to).toISOString(),
    totals: toTotals(totalsRow),
    latency,
  };
  if (!groupBy) return report;
  let rows: Row[] = [];
  if (!none) {
    const query = summed(deps, filter, groupBy).groupBy('u.g');
    const ordered =
      groupBy === 'day' || groupBy === 'hour'
        ? query.orderBy('u.g')
        : query.orderBy('cost_usd', 'desc').orderBy('requests', 'desc').orderBy('u.g');
    rows = await ordered.limit(MAX_GROUPS).execute();
  }
  report.groups = rows.map((row) => ({ key: groupName(groupBy, row['group_key']), ...toTotals(row) }));
  if (groupBy === 'key') {
    const names = await keyNames(deps, filter.tenantId, report.groups.map((g) => g.key).filter((k): k is string => k !== null));
    for (const g of report.groups) g.name = g.key === null ? null : (names.get(g.key) ?? null);
  }
  return report;
}

/** Names of a tenant's keys (revoked ones too: their usage stays), by id. */
async function keyNames(deps: Pick<GatewayDeps, 'db'>, tenantId: string, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await deps.db.selectFrom('api_keys').select(['id', 'name']).where('tenant_id', '=', tenantId).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** Latency percentiles of a tenant's calls over a range: the buckets of whole days and hours, and the records at either end bucketed here. */
async function latencyReport(deps: Pick<GatewayDeps, 'db'>, filter: UsageFilter): Promise<LatencyReport> {
  const { parts, records } = plan(LATENCY_ROLLUPS, filter.from, filter.to, false);
  const total = new Array<number>(LATENCY_BUCKETS).fill(0);
  const overhead = new Array<number>(LATENCY_BUCKETS).fill(0);
  const bucketQueries = parts.map((part) => {
    const period = sql.ref(periodColumn(part.spec.grain));
    return deps.db
      .selectFrom(part.spec.table as 'usage_rollup_latency')
      .select((eb) => ['bucket', eb.fn.sum<number>('total_calls').as('total'), eb.fn.sum<number>('overhead_calls').as('overhead')])
      .where('tenant_id', '=', filter.tenantId)
      .where(period, '>=', part.first)
      .where(period, '<', part.end)
      .groupBy('bucket')
      .execute();
  });
  const edgeQueries = records.map(([from, to]) => deps.db.selectFrom('usage_records').select(['overhead_ms', 'upstream_ms']).where(usageWhere({ ...filter, from, to })).execute());
  for (const rows of await Promise.all(bucketQueries)) {
    for (const r of rows) {
      total[r.bucket]! += Number(r.total);
      overhead[r.bucket]! += Number(r.overhead);
    }
  }
  for (const rows of await Promise.all(edgeQueries)) {
    for (const r of rows) {
      total[latencyBucket(r.overhead_ms + r.upstream_ms)]!++;
      overhead[latencyBucket(r.overhead_ms)]!++;
    }
  }
  const percentiles = (counts: number[]): Percentiles => ({
    p50: histogramQuantile(counts, 0.5),
    p95: histogramQuantile(counts, 0.95),
    p99: histogramQuantile(counts, 0.99),
  });
  return { calls: total.reduce((a, b) => a + b, 0), total_ms: percentiles(total), overhead_ms: percentiles(overhead) };
}

/**
 * The report grouped by hour or day with every period of the range present
 * (those without calls as zeros): the points of a chart over time.
 */
export async function usageSeries(
  deps: Pick<GatewayDeps, 'db'>,
  filter: UsageFilter,
  grain: 'hour' | 'day',
): Promise<{ report: UsageReport; points: { start: number; totals: UsageTotals }[] }> {
  const report = await usageReport(deps, filter, grain);
  const step = grain === 'hour' ? HOUR_MS : DAY_MS;
  const byStart = new Map((report.groups ?? []).map((g) => [Date.parse(grain === 'day' ? `${g.key}T00:00:00Z` : g.key!), g]));
  const points: { start: number; totals: UsageTotals }[] = [];
  for (let start = Math.floor(filter.from / step) * step; start < filter.to; start += step) {
    points.push({ start, totals: byStart.get(start) ?? toTotals({}) });
  }
  return { report, points };
}
