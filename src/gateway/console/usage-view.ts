import { escapeHtml } from '../../platform/html.ts';
import type { LatencyReport, UsageTotals } from '../usage/usage-queries.ts';
import type { ConsoleAssets } from './assets.ts';
import { fieldError } from './forms.ts';

/**
 * What the Overview and Usage pages share: the period (24 hours, 7 or 30
 * days, or custom dates; UTC), figures as people read them, tables that
 * scroll inside their box on a phone, and charts: a `<script
 * type="application/json">` data block (never executed) drawn by
 * console-charts.js with Chart.js, the same figures in a table beside it
 * for screen readers and for browsers without JavaScript.
 */
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
/** The longest custom period, in days (both dates included). */
export const MAX_CUSTOM_DAYS = 366;

export const PERIODS = { '24h': 'Last 24 hours', '7d': 'Last 7 days', '30d': 'Last 30 days', custom: 'Custom dates' } as const;
export type PeriodId = keyof typeof PERIODS;

export interface Period {
  id: PeriodId;
  /** Epoch milliseconds, inclusive. */
  from: number;
  /** Epoch milliseconds, exclusive. */
  to: number;
  /** The chart's points: hours for up to two days, else days. */
  grain: 'hour' | 'day';
  /** The dates the form shows: the first day and the last day (inclusive), YYYY-MM-DD. */
  fromDate: string;
  toDate: string;
}

export interface PeriodQuery {
  period?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** A YYYY-MM-DD date as the epoch milliseconds of its midnight (UTC); undefined for anything else (or a date that does not exist). */
function parseDate(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isFinite(ms) && isoDate(ms) === text && text >= '2000-01-01' && text <= '2999-12-31' ? ms : undefined;
}

/**
 * The period a page asks for. Presets end with the current hour (24 hours)
 * or today (days), so every point of the chart is a whole hour or day, in
 * UTC. Custom: both dates, From not after To, at most
 * {@link MAX_CUSTOM_DAYS} days; errors by field.
 */
export function parsePeriod(query: PeriodQuery, now: number, fallback: PeriodId): { ok: true; period: Period } | { ok: false; errors: Record<string, string> } {
  const id = (query.period || fallback) as PeriodId;
  if (!Object.hasOwn(PERIODS, id)) return { ok: false, errors: { period: 'Choose a period from the list.' } };
  if (id !== 'custom') {
    const [step, count] = id === '24h' ? [HOUR_MS, 24] : [DAY_MS, id === '7d' ? 7 : 30];
    const to = Math.floor(now / step) * step + step;
    const from = to - count * step;
    return { ok: true, period: { id, from, to, grain: id === '24h' ? 'hour' : 'day', fromDate: isoDate(from), toDate: isoDate(to - 1) } };
  }
  const errors: Record<string, string> = {};
  const fromText = (query.from ?? '').trim();
  const toText = (query.to ?? '').trim();
  const from = parseDate(fromText);
  const last = parseDate(toText);
  if (fromText === '') errors['from'] = 'Enter the first day of the period, such as 2026-03-01.';
  else if (from === undefined) errors['from'] = 'From must be a date such as 2026-03-01 (between 2000 and 2999).';
  if (toText === '') errors['to'] = 'Enter the last day of the period, such as 2026-03-31.';
  else if (last === undefined) errors['to'] = 'To must be a date such as 2026-03-31 (between 2000 and 2999).';
  if (from !== undefined && last !== undefined) {
    const days = (last - from) / DAY_MS + 1;
    if (days < 1) errors['to'] = 'To must be the same day as From or later.';
    else if (days > MAX_CUSTOM_DAYS) errors['to'] = `A custom period covers at most ${MAX_CUSTOM_DAYS} days; this one covers ${days}.`;
  }
  if (Object.keys(errors).length > 0 || from === undefined || last === undefined) return { ok: false, errors };
  const to = last + DAY_MS;
  return { ok: true, period: { id, from, to, grain: to - from <= 2 * DAY_MS ? 'hour' : 'day', fromDate: fromText, toDate: toText } };
}

/** The query string of a period, for links that keep it. */
export function periodParams(period: Period): Record<string, string> {
  return period.id === 'custom' ? { period: 'custom', from: period.fromDate, to: period.toDate } : { period: period.id };
}

/** A labelled select (its error tied to it, as `field` does for inputs). */
export function selectField(spec: { id: string; name: string; label: string; value: string; options: readonly [string, string][]; error?: string | undefined; hint?: string }): string {
  const described = [spec.hint ? `${spec.id}-hint` : '', spec.error ? `${spec.id}-error` : ''].filter(Boolean).join(' ');
  const options = spec.options
    .map(([value, label]) => `<option value="${escapeHtml(value)}"${value === spec.value ? ' selected' : ''}>${escapeHtml(label)}</option>`)
    .join('');
  return (
    `<div class="field${spec.error ? ' invalid' : ''}"><label for="${spec.id}">${escapeHtml(spec.label)}</label>` +
    (spec.hint ? `<p class="hint" id="${spec.id}-hint">${escapeHtml(spec.hint)}</p>` : '') +
    `<select id="${spec.id}" name="${spec.name}"${described ? ` aria-describedby="${described}"` : ''}${spec.error ? ' aria-invalid="true" autofocus' : ''}>${options}</select>` +
    fieldError(spec.id, spec.error) +
    '</div>'
  );
}

/** A labelled date input (the browser's date picker; YYYY-MM-DD typed where there is none). */
function dateField(spec: { id: string; name: string; label: string; value: string; hint: string; error?: string | undefined }): string {
  const described = [`${spec.id}-hint`, spec.error ? `${spec.id}-error` : ''].filter(Boolean).join(' ');
  return (
    `<div class="field${spec.error ? ' invalid' : ''}"><label for="${spec.id}">${escapeHtml(spec.label)}</label>` +
    `<p class="hint" id="${spec.id}-hint">${escapeHtml(spec.hint)}</p>` +
    `<input type="date" id="${spec.id}" name="${spec.name}" value="${escapeHtml(spec.value)}" min="2000-01-01" max="2999-12-31" aria-describedby="${described}"${spec.error ? ' aria-invalid="true" autofocus' : ''}>` +
    fieldError(spec.id, spec.error) +
    '</div>'
  );
}

/** The period's controls: the choice, and the two dates a custom period uses (filled with the shown period's). */
export function periodFields(values: { period: string; from: string; to: string }, errors: Record<string, string>): string {
  return `<div class="period-fields">
    ${selectField({ id: 'period', name: 'period', label: 'Period', value: values.period, options: Object.entries(PERIODS), hint: `Custom dates: up to ${MAX_CUSTOM_DAYS} days.`, error: errors['period'] })}
    ${dateField({ id: 'from', name: 'from', label: 'From (UTC)', value: values.from, hint: 'First day, for custom dates.', error: errors['from'] })}
    ${dateField({ id: 'to', name: 'to', label: 'To (UTC)', value: values.to, hint: 'Last day, included.', error: errors['to'] })}
  </div>`;
}

const DATE_TIME = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });
const DATE = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
const DAY_LABEL = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' });
const HOUR_LABEL = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });

/** "From 1 Mar 2026, 13:00 to 2 Mar 2026, 13:00 UTC" (or whole days). */
export function periodSentence(period: Period): string {
  const time = (ms: number, format: Intl.DateTimeFormat) => `<time datetime="${new Date(ms).toISOString()}">${escapeHtml(format.format(ms))}</time>`;
  if (period.grain === 'hour' && period.id === '24h') return `From ${time(period.from, DATE_TIME)} to ${time(period.to, DATE_TIME)} UTC, by hour.`;
  const days = Math.round((period.to - period.from) / DAY_MS);
  return `${time(period.from, DATE)} to ${time(period.to - DAY_MS, DATE)} included (${days} ${days === 1 ? 'day' : 'days'}, UTC), by ${period.grain}.`;
}

/** A point's label on a chart and in its table: "Mon 2 Mar" or "2 Mar, 13:00". */
export function pointLabel(start: number, grain: 'hour' | 'day'): string {
  return (grain === 'hour' ? HOUR_LABEL : DAY_LABEL).format(start);
}

// Figures

const USD_CENTS = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 });

/**
 * Dollars: to the cent from $1 on, with two significant digits below that
 * ($0.42, $0.0042, $0.000012), and "< $0.000001" for less.
 */
export function formatUsd(n: number): string {
  const abs = Math.abs(n);
  if (abs === 0 || abs >= 0.995) return USD_CENTS.format(n);
  if (abs < 0.000001) return n < 0 ? '−< $0.000001' : '< $0.000001';
  const digits = Math.min(6, Math.max(2, 1 - Math.floor(Math.log10(abs))));
  return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: digits }).format(n);
}

export const formatCount = (n: number): string => Math.round(n).toLocaleString('en-US');

/** A share as "42.3%", or a dash with a sentence for screen readers when there is nothing to divide by. */
export function formatRate(rate: number | null): string {
  return rate === null ? '<span aria-hidden="true">–</span><span class="sr-only">none</span>' : `${(rate * 100).toFixed(1)}%`;
}

/** Milliseconds as "0.84 ms", "38 ms", "1.25 s". */
export function formatMs(ms: number | null): string {
  if (ms === null) return '<span aria-hidden="true">–</span><span class="sr-only">no calls</span>';
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${Math.round(ms)} ms`;
  return `${ms.toPrecision(2)} ms`;
}

/**
 * The gateway's savings by cause, in the order the pipeline meets them:
 * together cost_saved_usd. The provider's own caching
 * (saved_provider_cache_usd) is not one of them: it is shown beside them.
 */
export const SAVINGS: readonly [keyof UsageTotals, string][] = [
  ['saved_cache_usd', 'Response cache (hits)'],
  ['saved_dedup_usd', 'In-flight dedup'],
  ['saved_compaction_usd', 'Compaction'],
  ['saved_routing_usd', 'Routing'],
  ['saved_prompt_cache_usd', 'Prompt-cache hints the gateway added'],
];

/** The big figures of a period: requests, spend, saved, cache hit rate (and latency when given). */
export function statsList(totals: UsageTotals, latency?: LatencyReport | null): string {
  const served = totals.cache_hits + totals.dedup_hits;
  const without = totals.cost_without_gateway_usd;
  const share = without > 0 ? `${((totals.cost_saved_usd / without) * 100).toFixed(1)}% of ${formatUsd(without)} without the gateway` : 'nothing spent yet';
  const items: [string, string, string][] = [
    ['Requests', formatCount(totals.requests), totals.errors > 0 ? `${formatCount(totals.errors)} failed` : 'none failed'],
    ['Spend', formatUsd(totals.cost_usd), `${formatCount(totals.prompt_tokens)} tokens in, ${formatCount(totals.completion_tokens)} out`],
    ['Saved by the gateway', formatUsd(totals.cost_saved_usd), share],
    ['The provider’s own caching', formatUsd(totals.saved_provider_cache_usd), 'saved by the provider’s prompt cache, not in the gateway’s saving'],
    [
      'Cache hit rate',
      formatRate(totals.cache_hit_rate),
      `${formatCount(served)} of ${formatCount(served + totals.cache_misses)} calls the cache could serve`,
    ],
  ];
  if (latency) {
    items.push(['Latency p50 / p95', `${formatMs(latency.total_ms.p50)} / ${formatMs(latency.total_ms.p95)}`, `gateway overhead ${formatMs(latency.overhead_ms.p50)} / ${formatMs(latency.overhead_ms.p95)}`]);
  }
  return `<dl class="stats">${items.map(([term, figure, note]) => `<div><dt>${term}</dt><dd><span class="figure">${figure}</span> <span class="muted">${note}</span></dd></div>`).join('')}</dl>`;
}

/** A table inside a box that scrolls sideways on a phone (focusable, so a keyboard can scroll it, and named by its caption). */
export function scrollTable(id: string, caption: string, head: readonly string[], rows: readonly string[][], extraClass = ''): string {
  return `<div class="figures-scroll" role="region" aria-labelledby="${id}-caption" tabindex="0"><table class="figures${extraClass ? ` ${extraClass}` : ''}" id="${id}">
    <caption id="${id}-caption">${caption}</caption>
    <thead><tr>${head.map((h, i) => `<th scope="col"${i > 0 ? ' class="num"' : ''}>${h}</th>`).join('')}</tr></thead>
    <tbody>${rows.map((cells) => `<tr>${cells.map((c, i) => (i === 0 ? `<th scope="row">${c}</th>` : `<td class="num">${c}</td>`)).join('')}</tr>`).join('')}</tbody>
  </table></div>`;
}

/** What console-charts.js draws: points or bars of one or more series, in dollars. */
export interface ChartData {
  kind: 'line' | 'bar';
  /** The canvas's accessible name: what it shows and where its figures are. */
  label: string;
  labels: string[];
  series: { name: string; values: number[]; role: 'spend' | 'without' }[];
}

/**
 * A chart: a box console-charts.js draws into, and its data as JSON that no
 * browser executes (`<` escaped, so a label such as `</script>` in a tag
 * cannot end the block).
 */
export function chartBlock(id: string, data: ChartData): string {
  const json = JSON.stringify(data).replace(/</g, '\\u003c');
  return `<div class="chart-box" data-chart="${id}-data"></div><script type="application/json" id="${id}-data">${json}</script>`;
}

/** The scripts of a page with charts: Chart.js, then the console's charts script (both deferred, in order). */
export function chartScripts(assets: ConsoleAssets): string {
  return `<script src="${assets.url('chart.umd.min.js')}" defer></script><script src="${assets.url('console-charts.js')}" defer></script>`;
}

/** A chart's figures, open for readers without JavaScript (console-charts.js closes it once the chart is drawn). */
export function chartFigures(summary: string, table: string): string {
  return `<details class="chart-figures" open><summary>${escapeHtml(summary)}</summary>${table}</details>`;
}
