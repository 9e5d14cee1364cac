import type { UsageGroup, UsageGroupBy } from '../usage/usage-queries.ts';

/**
 * The Usage page's groups as CSV (RFC 4180): a header line, one line per
 * group, CRLF line ends, a field quoted when it holds a comma, a quote or a
 * line break (its quotes doubled). A text field a spreadsheet would take for
 * a formula (starting with =, +, -, @, a tab or a carriage return; tags,
 * sessions, models and key names are the clients' and the owner's words)
 * starts with an apostrophe instead, so it stays text. Numbers are written
 * as numbers: money rounded to a millionth of a cent, the hit rate to four
 * places.
 */
const GROUP_COLUMN: Record<UsageGroupBy, string> = { model: 'model', model_requested: 'model_requested', key: 'key_id', tag: 'tag', session: 'session_id', day: 'day', hour: 'hour' };

const FIGURES = [
  'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'tokens_saved', 'cost_usd', 'cost_without_gateway_usd', 'cost_saved_usd',
  'saved_cache_usd', 'saved_dedup_usd', 'saved_compaction_usd', 'saved_routing_usd', 'saved_prompt_cache_usd', 'saved_provider_cache_usd',
  'cache_hits', 'dedup_hits', 'cache_misses', 'cache_hit_rate',
] as const satisfies readonly (keyof UsageGroup)[];

/** A text field, safe in a spreadsheet and quoted as RFC 4180 says. */
export function csvText(value: string): string {
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function csvNumber(name: (typeof FIGURES)[number], value: number | null): string {
  if (value === null) return '';
  if (name === 'cache_hit_rate') return String(Math.round(value * 10_000) / 10_000);
  // Fixed notation (no 1e-7), trailing zeros dropped.
  if (name.endsWith('_usd')) return value.toFixed(8).replace(/\.?0+$/, '') || '0';
  return String(value);
}

export function usageCsv(groupBy: UsageGroupBy, groups: readonly UsageGroup[]): string {
  const head = [GROUP_COLUMN[groupBy], ...(groupBy === 'key' ? ['key_name'] : []), ...FIGURES];
  const lines = groups.map((g) => [
    g.key === null ? '' : csvText(g.key),
    ...(groupBy === 'key' ? [g.name ? csvText(g.name) : ''] : []),
    ...FIGURES.map((f) => csvNumber(f, g[f])),
  ]);
  return [head, ...lines].map((cells) => `${cells.join(',')}\r\n`).join('');
}
