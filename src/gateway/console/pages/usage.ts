import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { HttpProblem } from '../../../platform/errors.ts';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { listApiKeys } from '../../control-plane/api-keys.ts';
import { type UsageFilter, usageFilter } from '../../usage/usage-filters.ts';
import { MAX_GROUPS, MAX_HOURLY_DAYS, type UsageGroup, type UsageGroupBy, type UsageReport, type UsageTotals, usageReport, usageSeries } from '../../usage/usage-queries.ts';
import type { ConsoleContext } from '../console.ts';
import { field } from '../forms.ts';
import { renderPage, sendConsolePage } from '../layout.ts';
import { usageCsv } from '../usage-csv.ts';
import {
  chartBlock,
  chartFigures,
  chartScripts,
  DAY_MS,
  formatCount,
  formatRate,
  formatUsd,
  type Period,
  parsePeriod,
  periodFields,
  periodParams,
  periodSentence,
  pointLabel,
  scrollTable,
  selectField,
  statsList,
} from '../usage-view.ts';

const Text = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
/** The page's query: the period, the grouping, and the usage API's filters under the API's names and bounds. */
const UsageQuery = Type.Object({
  period: Text(16),
  from: Text(32),
  to: Text(32),
  group_by: Text(16),
  tag: Text(256),
  session_id: Text(256),
  model: Text(256),
  key_id: Text(64),
});
type Query = { [K in keyof typeof UsageQuery.properties]?: string | undefined };

export const GROUPS: Record<UsageGroupBy, string> = { model: 'Model', model_requested: 'Model asked for', key: 'API key', tag: 'Tag', session: 'Session', day: 'Day', hour: 'Hour' };
const FILTERS = [
  ['tag', 'Tag', 256],
  ['session_id', 'Session', 256],
  ['model', 'Model', 256],
] as const;
/** Rows of the grouped table on the page (the CSV has every group, up to MAX_GROUPS). */
const PAGE_ROWS = 200;
/** Bars of the grouped chart. */
const CHART_BARS = 10;

interface View {
  period: Period;
  groupBy: UsageGroupBy;
  filter: UsageFilter;
}

/**
 * The page's query checked: the period (7 days unless asked), the grouping
 * (model unless asked; by hour over at most 31 days), and the filters, an
 * empty field being no filter. The filter is built by usageFilter, as the
 * API's is, for the session's tenant.
 */
function parseQuery(query: Query, tenantId: string, now: number): { ok: true; view: View } | { ok: false; errors: Record<string, string> } {
  const parsed = parsePeriod(query, now, '7d');
  const errors: Record<string, string> = parsed.ok ? {} : { ...parsed.errors };
  const groupBy = (query.group_by || 'model') as UsageGroupBy;
  if (!Object.hasOwn(GROUPS, groupBy)) errors['group_by'] = 'Choose a grouping from the list.';
  else if (groupBy === 'hour' && parsed.ok && parsed.period.to - parsed.period.from > MAX_HOURLY_DAYS * DAY_MS) {
    errors['group_by'] = `Hours can be listed over at most ${MAX_HOURLY_DAYS} days; choose Day for a longer period.`;
  }
  if (!parsed.ok || Object.keys(errors).length > 0) return { ok: false, errors };
  const value = (v: string | undefined) => (v?.trim() ? v.trim() : undefined);
  const { period } = parsed;
  const filter = usageFilter(
    tenantId,
    { from: String(period.from), to: String(period.to), tag: value(query.tag), session_id: value(query.session_id), model: value(query.model), key_id: value(query.key_id) },
    now,
  );
  return { ok: true, view: { period, groupBy, filter } };
}

/** The query string of a view: the period, the grouping and the filters set. */
function viewParams(view: View): URLSearchParams {
  const { filter } = view;
  const params = new URLSearchParams(periodParams(view.period));
  params.set('group_by', view.groupBy);
  for (const [name, value] of [['tag', filter.tag], ['session_id', filter.sessionId], ['model', filter.model], ['key_id', filter.keyId]] as const) {
    if (value !== undefined) params.set(name, value);
  }
  return params;
}

/**
 * Usage: the totals of a period, a chart of the spend over time against
 * what it would have cost without the gateway, and the calls grouped by
 * model, API key, tag, session, day or hour (a bar chart of the ten largest,
 * a table of the largest 200), filtered by tag, session, model and key;
 * GET /usage.csv exports the same groups. Every figure comes from
 * usageReport and usageSeries, the functions behind GET
 * /api/v1/tenant/usage, for the session's tenant.
 */
export async function usagePages(app: App, ctx: ConsoleContext): Promise<void> {
  const { deps } = ctx;

  app.get('/usage', { schema: { hide: true, querystring: UsageQuery } }, async (request, reply) => {
    const { tenantId } = ctx.session(request);
    const query = request.query;
    const parsed = parseQuery(query, tenantId, deps.clock.now());
    const keys = await listApiKeys(deps, tenantId);
    const errors = parsed.ok ? {} : parsed.errors;
    const values = parsed.ok
      ? { period: parsed.view.period.id, from: parsed.view.period.fromDate, to: parsed.view.period.toDate }
      : { period: query.period ?? '', from: query.from ?? '', to: query.to ?? '' };
    const keyOptions: [string, string][] = [['', 'Any key'], ...keys.map((k): [string, string] => [k.id, `${k.name} (${k.prefix}…)`])];
    const keyId = query.key_id?.trim() ?? '';
    if (keyId && !keys.some((k) => k.id === keyId)) keyOptions.push([keyId, `${keyId} (revoked or unknown)`]);
    const form = `<form method="get" action="/usage" class="usage-form" novalidate>
      ${periodFields(values, errors)}
      <div class="usage-filters">
        ${selectField({ id: 'group_by', name: 'group_by', label: 'Group by', value: query.group_by || 'model', options: Object.entries(GROUPS), error: errors['group_by'] })}
        ${FILTERS.map(([name, label, max]) => field({ id: name, name, label, value: query[name] ?? '', maxlength: max, autocomplete: 'off', hint: 'Empty: all.' })).join('')}
        ${selectField({ id: 'key_id', name: 'key_id', label: 'API key', value: keyId, options: keyOptions })}
      </div>
      <div class="form-row"><button type="submit">Show</button> <a href="/usage">Clear the filters</a></div>
    </form>`;
    let figures = '';
    if (parsed.ok) {
      const { view } = parsed;
      const { report, points } = await usageSeries(deps, view.filter, view.period.grain);
      const grouped = view.groupBy === view.period.grain ? report : await usageReport(deps, view.filter, view.groupBy);
      figures = usageFigures(view, report, points, grouped.groups ?? []);
    }
    // Chart.js and the charts' script only where a chart is drawn.
    const body = `<h1>Usage</h1>${form}${figures}${figures.includes('data-chart=') ? chartScripts(ctx.assets) : ''}`;
    return sendConsolePage(reply, parsed.ok ? 200 : 400, renderPage(await ctx.signedInFrame(request, 'Usage', 'usage'), body));
  });

  app.get('/usage.csv', { schema: { hide: true, querystring: UsageQuery } }, async (request: FastifyRequest<{ Querystring: Query }>, reply) => {
    const parsed = parseQuery(request.query, ctx.session(request).tenantId, deps.clock.now());
    if (!parsed.ok) throw new HttpProblem(400, 'invalid_query', Object.values(parsed.errors).join(' '));
    const { view } = parsed;
    const report = await usageReport(deps, view.filter, view.groupBy);
    const name = `usage-by-${view.groupBy}-${view.period.fromDate}-to-${view.period.toDate}.csv`;
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${name}"`)
      .header('cache-control', 'no-store')
      .header('x-content-type-options', 'nosniff')
      .send(usageCsv(view.groupBy, report.groups ?? []));
  });
}

function filterSentence(filter: UsageFilter): string {
  const parts = [
    filter.tag !== undefined ? `tag “${escapeHtml(filter.tag)}”` : '',
    filter.sessionId !== undefined ? `session “${escapeHtml(filter.sessionId)}”` : '',
    filter.model !== undefined ? `model “${escapeHtml(filter.model)}”` : '',
    filter.keyId !== undefined ? `API key <code>${escapeHtml(filter.keyId)}</code>` : '',
  ].filter(Boolean);
  return parts.length === 0 ? 'All calls.' : `Only calls with ${parts.join(', ')}.`;
}

function usageFigures(view: View, report: UsageReport, points: { start: number; totals: UsageTotals }[], groups: UsageGroup[]): string {
  const { period } = view;
  const unit = period.grain;
  const head = `<p class="period-sentence">${periodSentence(period)} ${filterSentence(view.filter)} All times are UTC.</p>
    <section aria-labelledby="totals-title">
      <h2 id="totals-title">Totals</h2>
      ${statsList(report.totals, report.latency)}
    </section>`;
  if (report.totals.requests === 0) return `${head}<p class="muted">No calls in this period${view.filter.tag || view.filter.sessionId || view.filter.model || view.filter.keyId ? ' with these filters' : ''}.</p>`;
  const labels = points.map((p) => pointLabel(p.start, unit));
  const timeRows = points.map((p, i) => [
    `<time datetime="${new Date(p.start).toISOString()}">${escapeHtml(labels[i]!)}</time>`,
    formatCount(p.totals.requests),
    formatUsd(p.totals.cost_usd),
    formatUsd(p.totals.cost_without_gateway_usd),
  ]);
  const overTime = `<section aria-labelledby="time-title">
    <h2 id="time-title">Spend by ${unit}</h2>
    ${chartBlock('time-chart', {
      kind: 'line',
      label: `Line chart of the spend and of the cost without the gateway, by ${unit} (UTC). The figures are in the table that follows.`,
      labels,
      series: [
        { name: 'Spend', values: points.map((p) => p.totals.cost_usd), role: 'spend' },
        { name: 'Without the gateway', values: points.map((p) => p.totals.cost_without_gateway_usd), role: 'without' },
      ],
    })}
    ${chartFigures(`The figures, by ${unit}`, scrollTable('time-figures', `Requests, spend and cost without the gateway, by ${unit} (UTC)`, [unit === 'hour' ? 'Hour' : 'Day', 'Requests', 'Spend', 'Without the gateway'], timeRows))}
  </section>`;
  return `${head}${overTime}${groupSection(view, groups)}`;
}

/** A group's name on the page: a day or an hour as a date, a label as itself, none as "(no tag)". */
function groupText(groupBy: UsageGroupBy, group: UsageGroup): string {
  if (groupBy === 'day') return pointLabel(Date.parse(`${group.key}T00:00:00Z`), 'day');
  if (groupBy === 'hour') return pointLabel(Date.parse(group.key!), 'hour');
  if (group.key === null) return groupBy === 'tag' ? '(no tag)' : groupBy === 'session' ? '(no session)' : '(none)';
  if (groupBy === 'key') return group.name ? `${group.name} (${group.key})` : `${group.key} (revoked)`;
  return group.key;
}

/** The request log's link for a group: its calls in the period, with the page's filters. */
function requestsHref(view: View, group: UsageGroup): string | undefined {
  // The request log's model filter matches the model asked for or the one that answered: it covers both groupings.
  const param = { tag: 'tag', session: 'session_id', model: 'model', model_requested: 'model', key: 'key_id', day: undefined, hour: undefined }[view.groupBy];
  if (!param || group.key === null) return undefined;
  const params = new URLSearchParams({ from: new Date(view.period.from).toISOString(), to: new Date(view.period.to).toISOString() });
  const { filter } = view;
  for (const [name, value] of [['tag', filter.tag], ['session_id', filter.sessionId], ['model', filter.model], ['key_id', filter.keyId]] as const) {
    if (value !== undefined) params.set(name, value);
  }
  params.set(param, group.key);
  return `/requests?${params}`;
}

function groupSection(view: View, groups: UsageGroup[]): string {
  const { groupBy } = view;
  const title = GROUPS[groupBy];
  const shown = groups.slice(0, PAGE_ROWS);
  const rows = shown.map((g) => {
    const text = escapeHtml(groupText(groupBy, g));
    const href = requestsHref(view, g);
    return [
      href ? `<a href="${escapeHtml(href)}">${text}</a>` : text,
      formatCount(g.requests),
      formatCount(g.errors),
      formatCount(g.prompt_tokens),
      formatCount(g.completion_tokens),
      formatUsd(g.cost_usd),
      formatUsd(g.cost_without_gateway_usd),
      formatUsd(g.cost_saved_usd),
      formatRate(g.cache_hit_rate),
    ];
  });
  const byTime = groupBy === 'day' || groupBy === 'hour';
  const top = groups.slice(0, CHART_BARS);
  const chart = byTime
    ? ''
    : chartBlock('group-chart', {
        kind: 'bar',
        label: `Bar chart of the spend and of the cost without the gateway of the ${top.length} largest groups by ${title.toLowerCase()}. The figures are in the table that follows.`,
        labels: top.map((g) => groupText(groupBy, g)),
        series: [
          { name: 'Spend', values: top.map((g) => g.cost_usd), role: 'spend' },
          { name: 'Without the gateway', values: top.map((g) => g.cost_without_gateway_usd), role: 'without' },
        ],
      });
  const order = byTime ? 'in time order' : 'the largest spend first';
  const more =
    groups.length > PAGE_ROWS
      ? `<p class="muted">The first ${PAGE_ROWS} of ${groups.length >= MAX_GROUPS ? `at least ${formatCount(MAX_GROUPS)}` : formatCount(groups.length)} groups are shown; the CSV has up to ${formatCount(MAX_GROUPS)}.</p>`
      : '';
  const csvHref = `/usage.csv?${viewParams(view)}`;
  return `<section aria-labelledby="groups-title">
    <h2 id="groups-title">By ${title.toLowerCase()}</h2>
    <p><a href="${escapeHtml(csvHref)}" download>Download as CSV</a> (the same groups and filters, up to ${formatCount(MAX_GROUPS)} rows).</p>
    ${chart}
    ${scrollTable(
      'groups',
      `Usage by ${title.toLowerCase()}, ${order}`,
      [title, 'Requests', 'Failed', 'Tokens in', 'Tokens out', 'Spend', 'Without the gateway', 'Saved', 'Cache hit rate'],
      rows,
      'groups-table',
    )}
    ${more}
  </section>`;
}
