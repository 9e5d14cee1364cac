import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { listRequests, parseStatus, type RequestEntry, type RequestQuery, requestFilter, requestLogKeys } from '../../usage/request-log.ts';
import type { ConsoleContext } from '../console.ts';
import { attempt, field, formError } from '../forms.ts';
import { renderPage, sendConsolePage } from '../layout.ts';
import { formatTime } from '../time.ts';
import { count, logLink, ms, none, requestHref, statusBadge, usd, utc } from './request-format.ts';
import { requestPage } from './request-page.ts';
import { choiceField } from './settings-fields.ts';

/** The log's query parameters: the API's (GET /api/v1/tenant/requests), with their bounds, so a page's URL is an API query too. */
const PARAMS = {
  from: 64,
  to: 64,
  status: 8,
  model: 256,
  tag: 256,
  session_id: 256,
  key_id: 64,
  cache_status: 8,
  cursor: 512,
} as const;
type Param = keyof typeof PARAMS;
type Values = Partial<Record<Param, string>>;

const FILTER_LABELS: Record<Exclude<Param, 'cursor'>, string> = {
  from: 'From',
  to: 'To',
  status: 'Status',
  model: 'Model',
  tag: 'Tag',
  session_id: 'Session',
  key_id: 'API key',
  cache_status: 'Cache',
};

const STATUS_CHOICES = [
  { value: '', label: 'Any status' },
  { value: 'ok', label: 'OK (2xx)' },
  { value: 'error', label: 'Errors (anything but 2xx)' },
  { value: '4xx', label: 'Refused (4xx)' },
  { value: '5xx', label: 'Failed upstream or here (5xx)' },
  ...[
    ['400', 'bad request'],
    ['401', 'no or wrong API key'],
    ['403', 'provider refused the key'],
    ['404', 'unknown model'],
    ['413', 'body too large'],
    ['429', 'over a limit'],
    ['499', 'the client left'],
    ['500', 'internal error'],
    ['502', 'provider failed'],
    ['503', 'provider overloaded'],
    ['504', 'provider timed out'],
  ].map(([code, what]) => ({ value: code!, label: `${code} (${what})` })),
];

const CACHE_CHOICES = [
  { value: '', label: 'Any' },
  { value: 'hit', label: 'Hit (answered from the cache)' },
  { value: 'dedup', label: 'Dedup (joined an identical call in flight)' },
  { value: 'miss', label: 'Miss (looked up, not there)' },
  { value: 'bypass', label: 'Bypass (cache not used)' },
  { value: 'partial', label: 'Partial (embeddings: some inputs from the cache)' },
];

/** A time typed as the form shows times (UTC, no zone): `2026-03-01 12:00` is read as UTC, as the page says. */
function asUtc(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/.test(trimmed) ? `${trimmed.replace(' ', 'T')}Z` : trimmed;
}

/** The query's known parameters as strings; a parameter given twice, or longer than the API takes, is an error on its field. */
function readQuery(query: unknown): { values: Values; errors: Record<string, string> } {
  const values: Values = {};
  const errors: Record<string, string> = {};
  const raw = (query ?? {}) as Record<string, unknown>;
  for (const [name, max] of Object.entries(PARAMS) as [Param, number][]) {
    const value = raw[name];
    if (value === undefined) continue;
    const label = name === 'cursor' ? 'The page link' : FILTER_LABELS[name];
    if (typeof value !== 'string') errors[name] = `${label} is given more than once in the address.`;
    else if (value.length > max) errors[name] = `${label} is longer than ${max} characters.`;
    else values[name] = value;
  }
  return { values, errors };
}

/** The log's address with these values (empty ones left out). */
function logHref(values: Values): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) if (value) params.set(name, value);
  const query = params.toString();
  return query ? `/requests?${query}` : '/requests';
}

interface LogState {
  values: Values;
  errors: Record<string, string>;
  page?: { requests: RequestEntry[]; next_cursor: string | null; from: number; to: number } | undefined;
}

/**
 * Requests: the request log (GET /requests) and each request's page (GET
 * /requests/{id}, request-page.ts), over listRequests and getRequest as
 * GET /api/v1/tenant/requests and /{id} are, keyed by the session's tenant.
 * The filter form is a GET: its URL is the page to share or bookmark, with
 * the API's parameter names. A bad value (a time, a status, a page link) is
 * the page again with the error next to its field, 400.
 */
export async function requestPages(app: App, ctx: ConsoleContext): Promise<void> {
  const { deps } = ctx;

  async function renderLog(request: FastifyRequest, reply: FastifyReply, state: LogState): Promise<FastifyReply> {
    const { tenantId } = ctx.session(request);
    const [keys, frame] = await Promise.all([requestLogKeys(deps, tenantId), ctx.signedInFrame(request, 'Requests', 'requests')]);
    const keyNames = new Map(keys.map((k) => [k.id, k.revoked_at ? `${k.name} (revoked)` : k.name]));
    const status = Object.keys(state.errors).length > 0 ? 400 : 200;
    const body = `<h1>Requests</h1>
      ${filterForm(state.values, state.errors, keys)}
      ${state.page ? results(state.values, state.page, keyNames) : '<p>Correct the filters above to see the calls.</p>'}`;
    return sendConsolePage(reply, status, renderPage(frame, body));
  }

  app.get('/requests', { schema: { hide: true } }, async (request, reply) => {
    const { values, errors } = readQuery(request.query);
    const { tenantId } = ctx.session(request);
    if (Object.keys(errors).length > 0) return renderLog(request, reply, { values, errors });
    const { cursor, ...filters } = values;
    const query: RequestQuery = { ...filters, from: asUtc(values.from), to: asUtc(values.to) };
    const filter = await attempt(async () => requestFilter(tenantId, query, deps.clock.now()));
    if (!filter.ok) return renderLog(request, reply, { values, errors: filter.errors });
    const page = await attempt(() => listRequests(deps, filter.value, { cursor }));
    if (!page.ok) return renderLog(request, reply, { values, errors: page.errors });
    return renderLog(request, reply, { values, errors: {}, page: { ...page.value, from: filter.value.from, to: filter.value.to } });
  });

  app.get(
    '/requests/:id',
    { schema: { hide: true, params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) }) } },
    async (request, reply) => requestPage(ctx, request, reply, request.params.id),
  );
}

function filterForm(values: Values, errors: Record<string, string>, keys: Awaited<ReturnType<typeof requestLogKeys>>): string {
  const statusChoices = [...STATUS_CHOICES];
  // A valid code the list does not name (from a shared link or the API's docs) is kept as a choice of its own.
  const typed = values.status ?? '';
  if (typed && !statusChoices.some((c) => c.value === typed) && isStatus(typed)) statusChoices.push({ value: typed, label: typed });
  const keyChoices = [
    { value: '', label: 'Any key' },
    ...keys.map((k) => ({ value: k.id, label: `${k.name} (${k.prefix}…${k.revoked_at ? ', revoked' : ''})` })),
  ];
  const keyId = values.key_id ?? '';
  if (keyId && !keys.some((k) => k.id === keyId)) keyChoices.push({ value: keyId, label: `${keyId} (no key of this workspace)` });
  // A page link's cursor is no field: a bad one (changed, cut, or from a newer version) is said above the form, with the way back.
  const pageLink = errors['cursor']
    ? `<p class="form-error" role="alert">This page link is not one the request log made (its cursor was changed or cut). <a href="${escapeHtml(logHref({ ...values, cursor: undefined }))}">Start again from the newest calls</a>.</p>`
    : '';
  return `<form method="get" action="/requests" class="filters" role="search" aria-label="Filter the request log" novalidate>
    ${pageLink}${formError({ '': errors[''] ?? '' })}
    <div class="filter-grid">
      ${choiceField({ id: 'f-status', name: 'status', label: 'Status', options: statusChoices, value: typed, error: errors['status'] })}
      ${choiceField({ id: 'f-cache', name: 'cache_status', label: 'Cache', options: CACHE_CHOICES, value: values.cache_status ?? '', error: errors['cache_status'] })}
      ${choiceField({ id: 'f-key', name: 'key_id', label: 'API key', options: keyChoices, value: keyId, error: errors['key_id'] })}
      ${field({ id: 'f-model', name: 'model', label: 'Model', value: values.model ?? '', maxlength: PARAMS.model, autocomplete: 'off', hint: 'Asked for (gpt-4o-mini, auto) or answering (openai/gpt-4o-mini).', error: errors['model'] })}
      ${field({ id: 'f-tag', name: 'tag', label: 'Tag', value: values.tag ?? '', maxlength: PARAMS.tag, autocomplete: 'off', hint: 'X-Gateway-Tag, exactly.', error: errors['tag'] })}
      ${field({ id: 'f-session', name: 'session_id', label: 'Session', value: values.session_id ?? '', maxlength: PARAMS.session_id, autocomplete: 'off', hint: 'X-Gateway-Session-Id, exactly.', error: errors['session_id'] })}
      ${field({ id: 'f-from', name: 'from', label: 'From (UTC)', value: values.from ?? '', maxlength: PARAMS.from, autocomplete: 'off', hint: '2026-03-01 or 2026-03-01 09:30. Empty: 30 days before To.', error: errors['from'] })}
      ${field({ id: 'f-to', name: 'to', label: 'To (UTC, not included)', value: values.to ?? '', maxlength: PARAMS.to, autocomplete: 'off', hint: 'Empty: now.', error: errors['to'] })}
    </div>
    <div class="form-actions"><button type="submit">Show calls</button> <a href="/requests">Clear the filters</a></div>
  </form>`;
}

function isStatus(value: string): boolean {
  try {
    return parseStatus(value) !== undefined;
  } catch {
    return false;
  }
}

function results(values: Values, page: NonNullable<LogState['page']>, keyNames: Map<string, string>): string {
  const range = `from ${formatTime(new Date(page.from).toISOString())} to ${formatTime(new Date(page.to).toISOString())}`;
  const filters = { ...values, cursor: undefined };
  if (page.requests.length === 0) return emptyResult(filters, range, values.cursor !== undefined);
  const rows = page.requests.map((e) => logRow(e, keyNames)).join('');
  const pager = [
    values.cursor ? `<a href="${escapeHtml(logHref(filters))}">Newest</a>` : '',
    page.next_cursor ? `<a href="${escapeHtml(logHref({ ...filters, cursor: page.next_cursor }))}" rel="next">Older</a>` : '',
  ].filter(Boolean);
  return `<div class="log-scroll" role="region" aria-labelledby="log-caption" tabindex="0">
      <table class="log-table">
        <caption id="log-caption">Calls ${range}, newest first${values.cursor ? ' (an older page)' : ''}. Times in UTC.</caption>
        <thead><tr>
          <th scope="col">Time</th><th scope="col">Status</th><th scope="col">Model asked → answered</th><th scope="col">API key</th>
          <th scope="col">Tag</th><th scope="col">Session</th><th scope="col">Cache</th><th scope="col" class="num">Tokens in / out</th>
          <th scope="col" class="num">Cost</th><th scope="col" class="num">Saved</th><th scope="col" class="num">Latency</th>
        </tr></thead>
        <tbody>${rows}</tbody>
      </table>
    </div>
    ${pager.length > 0 ? `<nav class="pager" aria-label="Pages of the request log">${pager.join(' ')}</nav>` : ''}`;
}

function logRow(e: RequestEntry, keyNames: Map<string, string>): string {
  const answered =
    e.model_used === null
      ? '<span class="muted">no provider</span>'
      : e.model_used === e.model_requested
        ? ''
        : `<span class="muted"><span aria-hidden="true">→ </span><span class="sr-only">answered by </span>${escapeHtml(e.model_used)}</span>`;
  const status = e.error_code ? `${statusBadge({ status: e.status, error_code: null })}<br><code class="small">${escapeHtml(e.error_code)}</code>` : statusBadge(e);
  return `<tr>
    <td class="nowrap"><a href="${requestHref(e.request_id)}">${utc(e.created_at, false, true)}</a></td>
    <td>${status}</td>
    <td class="lines">${escapeHtml(e.model_requested)}${answered ? `<br>${answered}` : ''}</td>
    <td>${escapeHtml(keyNames.get(e.key_id) ?? e.key_id)}</td>
    <td>${e.tag === null ? none : clipped('tag', e.tag)}</td>
    <td>${e.session_id === null ? none : clipped('session_id', e.session_id)}</td>
    <td>${escapeHtml(e.cache_status)}</td>
    <td class="num nowrap">${count(e.prompt_tokens)} / ${count(e.completion_tokens)}</td>
    <td class="num">${usd(e.cost_usd)}</td>
    <td class="num">${e.cost_saved_usd > 0 ? usd(e.cost_saved_usd) : none}</td>
    <td class="num nowrap">${ms(e.overhead_ms + e.upstream_ms)}</td>
  </tr>`;
}

/** A tag or session, shortened on screen (all of it read out, and in the tooltip), linking to the log filtered by it. */
function clipped(name: 'tag' | 'session_id', value: string): string {
  return logLink(name, value).replace('<a ', `<a class="clip" title="${escapeHtml(value)}" `);
}

/** No call matched: say so, over which range, and how to widen it (each filter given, with a link without it). */
function emptyResult(filters: Values, range: string, paged: boolean): string {
  const given = (Object.keys(FILTER_LABELS) as Exclude<Param, 'cursor'>[]).filter((name) => filters[name]);
  const ways = given.map((name) => {
    const without = { ...filters, [name]: undefined };
    return `<li><a href="${escapeHtml(logHref(without))}">Without ${escapeHtml(FILTER_LABELS[name])} = ${escapeHtml(filters[name]!)}</a></li>`;
  });
  if (!filters.from) ways.push('<li>An earlier From: without one, the log shows the 30 days up to To.</li>');
  const lead = paged ? `No older calls match ${range}.` : `No calls match ${given.length > 0 ? 'these filters ' : ''}${range}.`;
  return `<div class="empty">
    <p>${lead}</p>
    ${given.length === 0 && !paged ? '<p>Calls made with this workspace’s API keys appear here a few seconds after they end; the <a href="/quick-start">Quick start</a> shows how to make one.</p>' : ''}
    ${ways.length > 0 ? `<p>To widen the search:</p><ul>${ways.join('')}</ul>` : ''}
  </div>`;
}
