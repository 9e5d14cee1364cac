import { type ExpressionBuilder, type RawBuilder, sql } from 'kysely';
import type { GatewayDeps } from './deps.ts';
import type { GatewayTables } from './schema.ts';
import { DAY_MS, type UsageFilter, usageWhere } from './usage-filters.ts';

/** GET /api/v1/tenant/usage: totals over the usage records a filter selects, optionally grouped. */
export type UsageGroupBy = 'tag' | 'session' | 'model' | 'key' | 'day';

export interface UsageTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_saved: number;
  cost_usd: number;
  cost_saved_usd: number;
  saved_cache_usd: number;
  saved_compaction_usd: number;
  saved_routing_usd: number;
  saved_prompt_cache_usd: number;
  cache_hits: number;
  dedup_hits: number;
}

export interface UsageReport {
  from: string;
  to: string;
  totals: UsageTotals;
  /** Present when grouped: one entry per group, `key` null for records without a tag or session. */
  groups?: (UsageTotals & { key: string | null })[];
}

/** Most groups returned (the largest by cost first); a day grouping over a long range is its own bound. */
const MAX_GROUPS = 1000;

type Eb = ExpressionBuilder<GatewayTables, 'usage_records'>;

// Sums of no rows are NULL in SQL; counts and sums come back as numbers on both dialects (int8 is parsed).
const totalsSelection = (eb: Eb) => [
  eb.fn.countAll<number>().as('requests'),
  eb.fn.coalesce(eb.fn.sum<number>('prompt_tokens'), eb.lit(0)).as('prompt_tokens'),
  eb.fn.coalesce(eb.fn.sum<number>('completion_tokens'), eb.lit(0)).as('completion_tokens'),
  eb.fn.coalesce(eb.fn.sum<number>('saved_tokens'), eb.lit(0)).as('tokens_saved'),
  eb.fn.coalesce(eb.fn.sum<number>('cost_usd'), eb.lit(0)).as('cost_usd'),
  eb.fn.coalesce(eb.fn.sum<number>('cost_saved_usd'), eb.lit(0)).as('cost_saved_usd'),
  eb.fn.coalesce(eb.fn.sum<number>('saved_cache_usd'), eb.lit(0)).as('saved_cache_usd'),
  eb.fn.coalesce(eb.fn.sum<number>('saved_compaction_usd'), eb.lit(0)).as('saved_compaction_usd'),
  eb.fn.coalesce(eb.fn.sum<number>('saved_routing_usd'), eb.lit(0)).as('saved_routing_usd'),
  eb.fn.coalesce(eb.fn.sum<number>('saved_prompt_cache_usd'), eb.lit(0)).as('saved_prompt_cache_usd'),
  eb.fn.sum<number>(eb.case().when('cache_status', '=', 'hit').then(1).else(0).end()).as('cache_hits'),
  eb.fn.sum<number>(eb.case().when('cache_status', '=', 'dedup').then(1).else(0).end()).as('dedup_hits'),
];

/**
 * The grouping key as SQL. A day is `created_at / 86400000` (integer division
 * of non-negative epoch milliseconds: the floor, in UTC, the same on SQLite and
 * PostgreSQL); a model is the one that answered, else the one asked for.
 */
function groupKey(groupBy: UsageGroupBy): RawBuilder<string | number | null> {
  switch (groupBy) {
    case 'tag':
      return sql`tag`;
    case 'session':
      return sql`session_id`;
    case 'key':
      return sql`key_id`;
    case 'model':
      return sql`coalesce(model_used, model_requested)`;
    case 'day':
      return sql`created_at / ${sql.lit(DAY_MS)}`;
  }
}

function toTotals(row: Record<string, unknown>): UsageTotals {
  const n = (v: unknown) => Number(v ?? 0);
  return {
    requests: n(row['requests']),
    prompt_tokens: n(row['prompt_tokens']),
    completion_tokens: n(row['completion_tokens']),
    tokens_saved: n(row['tokens_saved']),
    cost_usd: n(row['cost_usd']),
    cost_saved_usd: n(row['cost_saved_usd']),
    saved_cache_usd: n(row['saved_cache_usd']),
    saved_compaction_usd: n(row['saved_compaction_usd']),
    saved_routing_usd: n(row['saved_routing_usd']),
    saved_prompt_cache_usd: n(row['saved_prompt_cache_usd']),
    cache_hits: n(row['cache_hits']),
    dedup_hits: n(row['dedup_hits']),
  };
}

export async function usageReport(deps: Pick<GatewayDeps, 'db'>, filter: UsageFilter, groupBy: UsageGroupBy | undefined): Promise<UsageReport> {
  const base = deps.db.selectFrom('usage_records').where(usageWhere(filter));
  const totalsRow = await base.select(totalsSelection).executeTakeFirstOrThrow();
  const report: UsageReport = {
    from: new Date(filter.from).toISOString(),
    to: new Date(filter.to).toISOString(),
    totals: toTotals(totalsRow),
  };
  if (!groupBy) return report;
  const key = groupKey(groupBy);
  let grouped = base.select((eb) => [key.as('group_key'), ...totalsSelection(eb)]).groupBy(key);
  grouped = groupBy === 'day' ? grouped.orderBy(key) : grouped.orderBy('cost_usd', 'desc').orderBy('requests', 'desc').orderBy(key);
  const rows = await grouped.limit(MAX_GROUPS).execute();
  report.groups = rows.map((row) => {
    const raw = row.group_key as unknown;
    const groupName = groupBy === 'day' ? new Date(Number(raw) * DAY_MS).toISOString().slice(0, 10) : (raw as string | null);
    return { key: groupName, ...toTotals(row) };
  });
  return report;
}
