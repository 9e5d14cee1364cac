import { Type } from 'typebox';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { listApiKeys } from '../../control-plane/api-keys.ts';
import { listProviderKeys } from '../../control-plane/provider-keys.ts';
import { usageFilter } from '../../usage/usage-filters.ts';
import { type LatencyReport, type UsageTotals, usageSeries } from '../../usage/usage-queries.ts';
import type { ConsoleContext } from '../console.ts';
import { renderPage, sendConsolePage } from '../layout.ts';
import {
  chartBlock,
  chartFigures,
  chartScripts,
  formatMs,
  formatUsd,
  type Period,
  parsePeriod,
  periodFields,
  periodSentence,
  pointLabel,
  SAVINGS,
  scrollTable,
  statsList,
} from '../usage-view.ts';

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

export const PeriodQuery = Type.Object({
  period: Type.Optional(Type.String({ maxLength: 16 })),
  from: Type.Optional(Type.String({ maxLength: 32 })),
  to: Type.Optional(Type.String({ maxLength: 32 })),
});

/**
 * GET /: where a sign-in lands. The two steps a workspace needs before its
 * first call while either is missing; then, for a period (the last 24 hours,
 * 7 or 30 days, or custom dates; 7 days unless asked), the requests, the
 * spend, what the gateway saved by cause, the cache hit rate, a chart of the
 * spend against what the same calls would have cost without the gateway,
 * and latency percentiles with the gateway's own overhead apart. The
 * figures come from usageSeries, the function behind GET
 * /api/v1/tenant/usage, for the session's tenant.
 */
export async function overviewPage(app: App, ctx: ConsoleContext): Promise<void> {
  app.get('/', { schema: { hide: true, querystring: PeriodQuery } }, async (request, reply) => {
    const { tenantId } = ctx.session(request);
    const now = ctx.deps.clock.now();
    const [providerKeys, apiKeys] = await Promise.all([listProviderKeys(ctx.deps, tenantId), listApiKeys(ctx.deps, tenantId)]);
    const parsed = parsePeriod(request.query, now, '7d');
    const values = parsed.ok
      ? { period: parsed.period.id, from: parsed.period.fromDate, to: parsed.period.toDate }
      : { period: request.query.period ?? '', from: request.query.from ?? '', to: request.query.to ?? '' };
    let figures = '';
    if (parsed.ok) {
      const { period } = parsed;
      const filter = usageFilter(tenantId, { from: String(period.from), to: String(period.to) }, now);
      const { report, points } = await usageSeries(ctx.deps, filter, period.grain);
      figures = periodFigures(period, report.totals, report.latency, points);
    }
    const body = `<h1>Overview</h1>
      ${providerKeys.length === 0 || apiKeys.length === 0 ? firstSteps(providerKeys.length, apiKeys.length) : ''}
      <form method="get" action="/" class="period-form" novalidate>
        ${periodFields(values, parsed.ok ? {} : parsed.errors)}
        <div class="form-row"><button type="submit">Show</button></div>
      </form>
      ${figures}
      ${figures.includes('data-chart=') ? chartScripts(ctx.assets) : ''}`;
    return sendConsolePage(reply, parsed.ok ? 200 : 400, renderPage(await ctx.signedInFrame(request, 'Overview', 'overview'), body));
  });
}

function firstSteps(providerKeys: number, apiKeys: number): string {
  const step = (done: boolean, text: string) => `<li><span class="state ${done ? 'done' : 'todo'}">${done ? 'Done' : 'To do'}</span> ${text}</li>`;
  return `<section aria-labelledby="start-title" class="panel">
    <h2 id="start-title">Before the first call</h2>
    <ol class="steps">
      ${step(providerKeys > 0, `<a href="/provider-keys">Provider keys</a>: ${plural(providerKeys, 'key', 'keys')} stored. The gateway calls each provider with your own key.`)}
      ${step(apiKeys > 0, `<a href="/api-keys">API keys</a>: ${plural(apiKeys, 'live key', 'live keys')}. Your programs send one as <code>Authorization: Bearer sk-gw-…</code> to this gateway's <code>/v1</code>.`)}
    </ol>
  </section>`;
}

function periodFigures(period: Period, totals: UsageTotals, latency: LatencyReport | null, points: { start: number; totals: UsageTotals }[]): string {
  const head = `<p class="period-sentence">${periodSentence(period)} All times are UTC.</p>
    <section aria-labelledby="period-title">
      <h2 id="period-title">In this period</h2>
      ${statsList(totals, latency)}
    </section>`;
  if (totals.requests === 0) return `${head}<p class="muted">No calls in this period.</p>`;
  return `${head}${savingsSection(totals)}${costSection(period, points)}${latency ? latencySection(latency) : ''}`;
}

function savingsSection(totals: UsageTotals): string {
  const share = (n: number) => (totals.cost_saved_usd > 0 ? `${((n / totals.cost_saved_usd) * 100).toFixed(1)}%` : '–');
  const rows = SAVINGS.map(([field, label]) => [escapeHtml(label), formatUsd(totals[field] as number), share(totals[field] as number)]);
  rows.push(['Total', formatUsd(totals.cost_saved_usd), share(totals.cost_saved_usd)]);
  return `<section aria-labelledby="saved-title">
    <h2 id="saved-title">What the gateway saved</h2>
    ${scrollTable('savings', 'Savings by cause', ['Cause', 'Saved', 'Share'], rows, 'savings-table')}
    <p class="muted">Without the gateway these calls would have cost ${formatUsd(totals.cost_without_gateway_usd)}: the spend, ${formatUsd(totals.cost_usd)}, plus what was saved.
    The cache hit rate counts response-cache hits and in-flight dedups over the calls the cache could serve (hits, dedups and misses);
    calls that bypassed the cache (it is off, <code>X-Gateway-No-Cache</code>, or the call was refused before a model was chosen) are left out.</p>
    <h3 id="provider-cache-title">The provider’s own caching</h3>
    ${scrollTable('provider-cache', 'The provider’s own caching, not in the total above', ['Cause', 'Saved'], [['The provider’s own caching', formatUsd(totals.saved_provider_cache_usd)]], 'savings-table')}
    <p class="muted">What the provider’s prompt cache saved on these calls that the gateway does not claim: its automatic caching, and reads at cache breakpoints your client placed, net of any write premium.
    It would be saved without the gateway too, so it is not part of what the gateway saved, nor of the cost without the gateway.</p>
  </section>`;
}

function costSection(period: Period, points: { start: number; totals: UsageTotals }[]): string {
  const labels = points.map((p) => pointLabel(p.start, period.grain));
  const rows = points.map((p, i) => [
    `<time datetime="${new Date(p.start).toISOString()}">${escapeHtml(labels[i]!)}</time>`,
    formatUsd(p.totals.cost_usd),
    formatUsd(p.totals.cost_without_gateway_usd),
    formatUsd(p.totals.cost_saved_usd),
  ]);
  const unit = period.grain === 'hour' ? 'hour' : 'day';
  return `<section aria-labelledby="cost-title">
    <h2 id="cost-title">Spend and the cost without the gateway, by ${unit}</h2>
    ${chartBlock('cost-chart', {
      kind: 'line',
      label: `Line chart of the spend and of what the same calls would have cost without the gateway, by ${unit} (UTC). The figures are in the table that follows.`,
      labels,
      series: [
        { name: 'Spend', values: points.map((p) => p.totals.cost_usd), role: 'spend' },
        { name: 'Without the gateway', values: points.map((p) => p.totals.cost_without_gateway_usd), role: 'without' },
      ],
    })}
    ${chartFigures(`The figures, by ${unit}`, scrollTable('cost-figures', `Spend and cost without the gateway, by ${unit} (UTC)`, [unit === 'hour' ? 'Hour' : 'Day', 'Spend', 'Without the gateway', 'Saved'], rows))}
  </section>`;
}

function latencySection(latency: LatencyReport): string {
  const rows = (['p50', 'p95', 'p99'] as const).map((p) => [p, formatMs(latency.total_ms[p]), formatMs(latency.overhead_ms[p])]);
  return `<section aria-labelledby="latency-title">
    <h2 id="latency-title">Latency</h2>
    ${scrollTable('latency', `Latency percentiles over ${latency.calls.toLocaleString('en-US')} calls`, ['Percentile', 'Total', 'Gateway overhead'], rows, 'latency-table')}
    <p class="muted">Total is what a client waited for the answer (for a stream, for its first bytes): the provider's time plus the gateway's overhead, its own part.
    Percentiles are estimated from counts in buckets ten to a decade (each 1.26 times as wide as it starts): the true value lies in the same bucket, so an estimate is at most 26% off and usually within a few percent.</p>
  </section>`;
}
