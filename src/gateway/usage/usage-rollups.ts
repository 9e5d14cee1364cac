import { CompiledQuery, type RawBuilder, sql } from 'kysely';
import type { GatewayDb, GatewayTables, UsageMeasures, UsageRecordRow } from '../schema.ts';

/**
 * Usage rollups: the usage records summed per tenant and hour, and per
 * tenant and day, so that the usage API and the console's pages read a few
 * thousand rows rather than a million records. Kept by the usage writer
 * (usage/usage-writer.ts) in the transaction that inserts the records,
 * and only for the records that insert added (`RETURNING request_id` of
 * `ON CONFLICT DO NOTHING`): a record replayed from the usage journal, or
 * written by two replicas, is counted once. Each rollup row is an upsert
 * adding to its sums (`x = x + excluded.x`), atomic on PostgreSQL under any
 * number of replicas; a batch upserts its rows in key order, so two
 * replicas' transactions take their row locks in the same order and never
 * deadlock on each other.
 *
 * Three sets of labels, each in tables of its own (a query reads the
 * smallest that has the labels it filters or groups by, usage-queries.ts):
 * - none (the Overview, unfiltered totals): per hour only, 24 rows a day;
 * - key, model asked for, model that answered, tag: per hour and per day;
 * - those and the session, the label of high cardinality, kept apart so the
 *   other two stay small: per hour and per day, for grouping by session (a
 *   filter on one session reads that session's records, usage-queries.ts).
 * Whole days of a range are read from the daily tables, whole hours from
 * the hourly ones, the rest from the records. And per tenant, hour and day,
 * how many calls fell in each latency bucket (10 a decade), for percentiles
 * without reading records.
 *
 * Purge (purge.ts) deletes rollup hours and days with the same retention as
 * the records, once the whole hour or day is past it.
 */
export const HOUR_MS = 3_600_000;

export const MEASURES = [
  'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'saved_tokens', 'cost_usd', 'cost_saved_usd',
  'saved_cache_usd', 'saved_dedup_usd', 'saved_compaction_usd', 'saved_routing_usd', 'saved_prompt_cache_usd',
  'saved_provider_cache_usd', 'cache_hits', 'dedup_hits', 'cache_misses',
] as const satisfies readonly (keyof UsageMeasures)[];

export type Measure = (typeof MEASURES)[number];

/**
 * The measures the rollup tables had when migration 0006 created them:
 * 0006 creates and fills them with these, and later migrations add the
 * rest (0011: saved_provider_cache_usd), so that a database migrated from
 * before 0006 passes through the same tables as one that was not.
 */
export const MEASURES_0006: readonly Measure[] = MEASURES.filter((m) => m !== 'saved_provider_cache_usd');

/** The columns of a usage record the rollups read. */
export const ROLLUP_SOURCE = [
  'tenant_id', 'created_at', 'key_id', 'model_requested', 'model_used', 'tag', 'session_id', 'status', 'prompt_tokens',
  'completion_tokens', 'saved_tokens', 'cost_usd', 'cost_saved_usd', 'saved_cache_usd', 'saved_compaction_usd',
  'saved_routing_usd', 'saved_prompt_cache_usd', 'saved_provider_cache_usd', 'cache_status', 'overhead_ms', 'upstream_ms',
] as const satisfies readonly (keyof UsageRecordRow)[];

export type RollupSource = Pick<UsageRecordRow, (typeof ROLLUP_SOURCE)[number]>;

/** What one record adds to the sums. A dedup's saved_cache_usd is dedup's, a hit's is the cache's. */
export function measuresOf(r: RollupSource): UsageMeasures {
  const dedup = r.cache_status === 'dedup';
  return {
    requests: 1,
    errors: r.status >= 400 ? 1 : 0,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    saved_tokens: r.saved_tokens,
    cost_usd: r.cost_usd,
    cost_saved_usd: r.cost_saved_usd,
    saved_cache_usd: dedup ? 0 : r.saved_cache_usd,
    saved_dedup_usd: dedup ? r.saved_cache_usd : 0,
    saved_compaction_usd: r.saved_compaction_usd,
    saved_routing_usd: r.saved_routing_usd,
    saved_prompt_cache_usd: r.saved_prompt_cache_usd,
    saved_provider_cache_usd: r.saved_provider_cache_usd,
    cache_hits: r.cache_status === 'hit' ? 1 : 0,
    dedup_hits: dedup ? 1 : 0,
    cache_misses: r.cache_status === 'miss' ? 1 : 0,
  };
}

/**
 * The same measures as SQL over usage_records' columns, for the records a
 * query reads directly (the parts of a range that are not whole hours).
 * Kept beside {@link measuresOf}: the two must agree (a test compares them).
 */
export const MEASURES_SQL: Record<keyof UsageMeasures, RawBuilder<number>> = {
  requests: sql<number>`1`,
  errors: sql<number>`case when status >= 400 then 1 else 0 end`,
  prompt_tokens: sql<number>`prompt_tokens`,
  completion_tokens: sql<number>`completion_tokens`,
  saved_tokens: sql<number>`saved_tokens`,
  cost_usd: sql<number>`cost_usd`,
  cost_saved_usd: sql<number>`cost_saved_usd`,
  saved_cache_usd: sql<number>`case when cache_status = 'dedup' then 0 else saved_cache_usd end`,
  saved_dedup_usd: sql<number>`case when cache_status = 'dedup' then saved_cache_usd else 0 end`,
  saved_compaction_usd: sql<number>`saved_compaction_usd`,
  saved_routing_usd: sql<number>`saved_routing_usd`,
  saved_prompt_cache_usd: sql<number>`saved_prompt_cache_usd`,
  saved_provider_cache_usd: sql<number>`saved_provider_cache_usd`,
  cache_hits: sql<number>`case when cache_status = 'hit' then 1 else 0 end`,
  dedup_hits: sql<number>`case when cache_status = 'dedup' then 1 else 0 end`,
  cache_misses: sql<number>`case when cache_status = 'miss' then 1 else 0 end`,
};

export type RollupLabel = 'key_id' | 'model_requested' | 'model_used' | 'tag' | 'session_id';
export type RollupGrain = 'hour' | 'day';

export interface RollupSpec<T extends keyof GatewayTables = keyof GatewayTables> {
  table: T;
  grain: RollupGrain;
  /** The labels kept, after the tenant and the hour or day, in key order. */
  labels: readonly RollupLabel[];
}

const LABELS = ['key_id', 'model_requested', 'model_used', 'tag'] as const;

/** The tables of summed measures, smallest first within each grain. */
export const ROLLUPS = [
  { table: 'usage_rollup_tenant', grain: 'hour', labels: [] },
  { table: 'usage_rollup_labels', grain: 'hour', labels: LABELS },
  { table: 'usage_rollup_labels_daily', grain: 'day', labels: LABELS },
  { table: 'usage_rollup_sessions', grain: 'hour', labels: [...LABELS, 'session_id'] },
  { table: 'usage_rollup_sessions_daily', grain: 'day', labels: [...LABELS, 'session_id'] },
] as const satisfies readonly RollupSpec[];

export type RollupTable = (typeof ROLLUPS)[number]['table'];

/** The tables of latency bucket counts. */
export const LATENCY_ROLLUPS = [
  { table: 'usage_rollup_latency', grain: 'hour', labels: [] },
  { table: 'usage_rollup_latency_daily', grain: 'day', labels: [] },
] as const satisfies readonly RollupSpec[];

/** The time column of a grain's tables: hours or days since the epoch (UTC). */
export const periodColumn = (grain: RollupGrain): 'hour' | 'day' => grain;
export const GRAIN_MS: Record<RollupGrain, number> = { hour: HOUR_MS, day: 86_400_000 };

/** A label of a record as the rollups keep it: '' for none. */
const labelOf = (r: RollupSource, label: RollupLabel): string => r[label] ?? '';

// Latency buckets: bucket 0 holds [0, 0.01 ms); bucket b ≥ 1 holds [0.01·10^((b-1)/10), 0.01·10^(b/10)) ms;
// the last one everything from 10^7 ms (2.8 hours) on. Ten a decade: each is 10^0.1 ≈ 1.26 times as wide as it starts.
const LATENCY_BASE_MS = 0.01;
const PER_DECADE = 10;
export const LATENCY_BUCKETS = 92;

/** The bucket of a latency in milliseconds (NaN and negatives: bucket 0). */
export function latencyBucket(ms: number): number {
  if (!(ms >= LATENCY_BASE_MS)) return 0;
  return Math.min(LATENCY_BUCKETS - 1, 1 + Math.floor(PER_DECADE * Math.log10(ms / LATENCY_BASE_MS)));
}

/** The lower and upper bound of a bucket, in milliseconds (the last bucket's upper bound is its lower one). */
export function bucketBounds(bucket: number): [number, number] {
  if (bucket <= 0) return [0, LATENCY_BASE_MS];
  const lo = LATENCY_BASE_MS * 10 ** ((bucket - 1) / PER_DECADE);
  return bucket >= LATENCY_BUCKETS - 1 ? [lo, lo] : [lo, LATENCY_BASE_MS * 10 ** (bucket / PER_DECADE)];
}

/**
 * The q-quantile (0 < q < 1) of a histogram of bucket counts, interpolated
 * within its bucket on a log scale (linearly in bucket 0); null for no calls.
 * The true value lies in the same bucket: at most 26% off, usually far less.
 */
export function histogramQuantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let b = 0; b < counts.length; b++) {
    const n = counts[b] ?? 0;
    if (n === 0 || below + n < rank) {
      below += n;
      continue;
    }
    const fraction = Math.min(1, Math.max(0, (rank - below) / n));
    const [lo, hi] = bucketBounds(b);
    return b === 0 ? hi * fraction : lo * (hi / lo) ** fraction;
  }
  return bucketBounds(counts.length - 1)[0];
}

type RollupRow = Record<string, number | string>;

/** Adds one record's measures to a rollup row's sums (written out: this runs for every record and table). */
function addMeasures(row: RollupRow, add: UsageMeasures): void {
  const r = row as unknown as UsageMeasures;
  r.requests += add.requests;
  r.errors += add.errors;
  r.prompt_tokens += add.prompt_tokens;
  r.completion_tokens += add.completion_tokens;
  r.saved_tokens += add.saved_tokens;
  r.cost_usd += add.cost_usd;
  r.cost_saved_usd += add.cost_saved_usd;
  r.saved_cache_usd += add.saved_cache_usd;
  r.saved_dedup_usd += add.saved_dedup_usd;
  r.saved_compaction_usd += add.saved_compaction_usd;
  r.saved_routing_usd += add.saved_routing_usd;
  r.saved_prompt_cache_usd += add.saved_prompt_cache_usd;
  r.saved_provider_cache_usd += add.saved_provider_cache_usd;
  r.cache_hits += add.cache_hits;
  r.dedup_hits += add.dedup_hits;
  r.cache_misses += add.cache_misses;
}

/**
 * How far a record's labels match the record before it, as the rollup
 * tables group them: 0 another tenant; 1 the same tenant; 2 also the same
 * key, models and tag; 3 also the same session. Compared as stored (a
 * missing tag and an empty one differ here, though they share a row): a
 * mismatch only sends the record the slower way, by its row's key.
 */
function likeness(a: RollupSource | undefined, b: RollupSource): number {
  if (a === undefined || a.tenant_id !== b.tenant_id) return 0;
  if (a.key_id !== b.key_id || a.model_requested !== b.model_requested || a.model_used !== b.model_used || a.tag !== b.tag) return 1;
  return a.session_id === b.session_id ? 3 : 2;
}

/** The likeness two records need to add to the same row of a table with these labels (when in the same period). */
function likenessNeeded(labels: readonly RollupLabel[]): number {
  return labels.length === 0 ? 1 : labels.includes('session_id') ? 3 : 2;
}

/** The latency rollup row of the last record's tenant and period for `bucket`, made the first time. */
function latencyRow(rows: Map<string, RollupRow>, grain: RollupGrain, last: LatencyGroup, bucket: number): RollupRow {
  let row = last.byBucket[bucket];
  if (row === undefined) {
    const id = JSON.stringify([last.tenant, last.period, bucket]);
    row = rows.get(id);
    if (!row) {
      row = { tenant_id: last.tenant, [periodColumn(grain)]: last.period, bucket, total_calls: 0, overhead_calls: 0 };
      rows.set(id, row);
    }
    last.byBucket[bucket] = row;
  }
  return row;
}

/** A tenant and period's latency rollup rows, by bucket. */
interface LatencyGroup {
  tenant: string;
  period: number;
  byBucket: (RollupRow | undefined)[];
}

/**
 * What a set of records adds to each rollup table, one row per rollup row
 * touched, in key order. A record usually adds to the rows the record
 * before it did (a batch is mostly one tenant's calls of the same hour, key
 * and model), so each table remembers the last row it added to and finds it
 * again by comparing fields rather than by building the row's key: that
 * took most of the time this spent per record, on the thread that writes
 * the usage batches.
 */
export function rollUp(records: readonly RollupSource[]): { table: keyof GatewayTables; keys: readonly string[]; rows: RollupRow[] }[] {
  const sums = ROLLUPS.map((spec) => ({
    spec,
    ms: GRAIN_MS[spec.grain],
    needed: likenessNeeded(spec.labels),
    rows: new Map<string, RollupRow>(),
    last: undefined as { period: number; row: RollupRow } | undefined,
  }));
  const latency = LATENCY_ROLLUPS.map((spec) => ({
    spec,
    ms: GRAIN_MS[spec.grain],
    rows: new Map<string, RollupRow>(),
    /** The rows of the last record's tenant and period, by bucket. */
    last: undefined as LatencyGroup | undefined,
  }));
  let previous: RollupSource | undefined;
  for (const record of records) {
    const add = measuresOf(record);
    // Every table's last row is the previous record's: how alike the two are says, per table, whether it is this one's.
    const alike = likeness(previous, record);
    previous = record;
    for (const table of sums) {
      const { spec } = table;
      const period = Math.floor(record.created_at / table.ms);
      const last = table.last;
      if (last !== undefined && last.period === period && alike >= table.needed) {
        addMeasures(last.row, add);
        continue;
      }
      const labels = spec.labels.map((l) => labelOf(record, l));
      const id = JSON.stringify([record.tenant_id, period, ...labels]);
      let row = table.rows.get(id);
      if (row) addMeasures(row, add);
      else {
        row = { tenant_id: record.tenant_id, [periodColumn(spec.grain)]: period, ...add };
        spec.labels.forEach((l, i) => {
          row![l] = labels[i]!;
        });
        table.rows.set(id, row);
      }
      table.last = { period, row };
    }
    const total = latencyBucket(record.overhead_ms + record.upstream_ms);
    const overhead = latencyBucket(record.overhead_ms);
    for (const table of latency) {
      const period = Math.floor(record.created_at / table.ms);
      let last = table.last;
      if (last === undefined || last.period !== period || last.tenant !== record.tenant_id) {
        last = { tenant: record.tenant_id, period, byBucket: [] };
        table.last = last;
      }
      (latencyRow(table.rows, table.spec.grain, last, total).total_calls as number)++;
      (latencyRow(table.rows, table.spec.grain, last, overhead).overhead_calls as number)++;
    }
  }
  // Key order: the order in which every transaction locks rollup rows.
  const sorted = (m: Map<string, RollupRow>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  return [
    ...sums.map(({ spec, rows }) => ({ table: spec.table, keys: ['tenant_id', periodColumn(spec.grain), ...spec.labels], rows: sorted(rows) })),
    ...latency.map(({ spec, rows }) => ({ table: spec.table, keys: ['tenant_id', periodColumn(spec.grain), 'bucket'], rows: sorted(rows) })),
  ];
}

/** Statement sizes, largest first (as for the records' insert: a few SQL texts, each prepared once). */
const CHUNK_SIZES = [64, 16, 4, 1];

/** The upsert SQL per database adapter, table and row count. */
const upsertSql = new WeakMap<object, Map<string, string>>();

/**
 * Adds `records` to the rollups, in the caller's transaction. Give it only
 * records that the same transaction inserted: that is what makes each
 * record counted once. `measures`: the measure columns the tables have
 * (all of them but while migrations run, {@link MEASURES_0006}).
 */
export async function addToRollups(db: GatewayDb, records: readonly RollupSource[], measures: readonly Measure[] = MEASURES): Promise<void> {
  if (records.length === 0) return;
  for (const { table, keys, rows } of rollUp(records)) {
    const latency = LATENCY_ROLLUPS.some((l) => l.table === table);
    const columns = [...keys, ...(latency ? Object.keys(rows[0]!).filter((c) => !keys.includes(c)) : measures)];
    let at = 0;
    for (const size of CHUNK_SIZES) {
      while (rows.length - at >= size) {
        await upsert(db, table, keys, columns, rows.slice(at, at + size));
        at += size;
      }
    }
  }
}

async function upsert(db: GatewayDb, table: string, keys: readonly string[], columns: readonly string[], rows: readonly Record<string, unknown>[]): Promise<void> {
  const adapter = db.getExecutor().adapter;
  let texts = upsertSql.get(adapter);
  if (!texts) {
    texts = new Map();
    upsertSql.set(adapter, texts);
  }
  // The columns too: 0006 fills the tables with fewer measures than the writer later adds to them, on the same adapter.
  const id = `${table}:${rows.length}:${columns.join()}`;
  let text = texts.get(id);
  if (text === undefined) {
    const sums = columns.filter((c) => !keys.includes(c));
    const tuple = sql`(${sql.join(columns.map(() => 0))})`;
    // Column names come from the code's own lists, never from a request.
    text = sql`insert into ${sql.table(table)} (${sql.join(columns.map((c) => sql.ref(c)))}) values ${sql.join(rows.map(() => tuple))}
      on conflict (${sql.join(keys.map((c) => sql.ref(c)))}) do update set ${sql.join(
        sums.map((c) => sql`${sql.ref(c)} = ${sql.ref(`${table}.${c}`)} + ${sql.raw(`excluded.${c}`)}`),
      )}`.compile(db).sql;
    texts.set(id, text);
  }
  const values: unknown[] = [];
  for (const row of rows) for (const c of columns) values.push(row[c]);
  await db.executeQuery(CompiledQuery.raw(text, values));
}

/** Records read per page when the rollups are filled from the records. */
const REBUILD_PAGE = 5000;

/**
 * Empties the rollups and fills them again from every usage record, page by
 * page in (tenant, time) order so that each page adds to few rollup rows.
 * The migration that creates the rollups runs it (with the measures of its
 * time, {@link MEASURES_0006}: the records and the tables do not have the
 * later columns yet, which read as 0); it is also the repair if records
 * were ever written without them (a replica of a version before the
 * rollups, still running during a rolling upgrade). Run it while nothing
 * writes records, or in one transaction.
 */
export async function rebuildUsageRollups(db: GatewayDb, measures: readonly Measure[] = MEASURES): Promise<number> {
  const source = ROLLUP_SOURCE.map((c) => ((MEASURES as readonly string[]).includes(c) && !measures.includes(c as Measure) ? sql<number>`0`.as(c) : c));
  for (const { table } of [...ROLLUPS, ...LATENCY_ROLLUPS]) await db.deleteFrom(table).execute();
  let after: [string, number, string] | undefined;
  let count = 0;
  for (;;) {
    let page = db.selectFrom('usage_records').select([...source, 'request_id'] as unknown as [...typeof ROLLUP_SOURCE, 'request_id']);
    if (after) {
      const [t, c, r] = after;
      page = page.where((eb) => eb(eb.refTuple('tenant_id', 'created_at', 'request_id'), '>', eb.tuple(t, c, r)));
    }
    const rows = await page.orderBy('tenant_id').orderBy('created_at').orderBy('request_id').limit(REBUILD_PAGE).execute();
    await addToRollups(db, rows, measures);
    count += rows.length;
    const last = rows.at(-1);
    if (!last || rows.length < REBUILD_PAGE) return count;
    after = [last.tenant_id, last.created_at, last.request_id];
  }
}
