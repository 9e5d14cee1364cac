import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { fieldProblem, HttpProblem } from '../../platform/errors.ts';
import type { GatewayDeps } from '../deps.ts';
import type { CacheStatus } from '../pipeline/call.ts';
import type { GatewayDb, GatewayTables, UsageRecordRow } from '../schema.ts';
import { parseTime, type UsageFilter, type UsageQuery, usageFilter } from './usage-filters.ts';

/**
 * GET /api/v1/tenant/requests: a tenant's usage records, newest first, in
 * pages. The cursor is opaque to clients: base64url of `created_at.request_id`
 * of the last entry of the previous page; (created_at, request_id) is unique.
 *
 * Every filter has an index that hands its rows over newest first
 * (migration 0007_request_log_indexes), so a page reads about one page of
 * rows whether the filter matches most of a million records or three of
 * them, and a deep page starts at its cursor instead of skipping.
 */
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;

export interface RequestEntry {
  request_id: string;
  key_id: string;
  session_id: string | null;
  tag: string | null;
  model_requested: string;
  model_used: string | null;
  provider: string | null;
  status: number;
  error_code: string | null;
  stream: boolean;
  prompt_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  saved_tokens: number;
  cost_usd: number;
  cost_saved_usd: number;
  saved_cache_usd: number;
  saved_compaction_usd: number;
  saved_routing_usd: number;
  saved_prompt_cache_usd: number;
  /** The provider's own caching: not in cost_saved_usd. */
  saved_provider_cache_usd: number;
  compaction_saved_tokens: number;
  cache_status: string;
  compaction: string;
  route_reason: string | null;
  /** Every upstream attempt when there were several (retries, fallbacks); null for one. */
  attempts: { model: string; status: number; error_code: string | null; ms: number }[] | null;
  overhead_ms: number;
  upstream_ms: number;
  created_at: string;
  /** Null: the provider's own counts; else `clamped`, `estimated` or both (schema.ts). */
  usage_flags: string | null;
  /** The inbound API: `chat.completions` or `messages`. */
  surface: string;
}

/** `body_storage`: what became of the bodies (UsageRecordRow's; null: the workspace did not store them then). */
export type RequestDetail = RequestEntry & { request_body: string | null; response_body: string | null; body_storage: string | null };

const METADATA = [
  'request_id', 'key_id', 'session_id', 'tag', 'model_requested', 'model_used', 'provider', 'status', 'error_code', 'stream',
  'prompt_tokens', 'cached_tokens', 'cache_write_tokens', 'completion_tokens', 'reasoning_tokens', 'saved_tokens',
  'cost_usd', 'cost_saved_usd', 'saved_cache_usd', 'saved_compaction_usd', 'saved_routing_usd', 'saved_prompt_cache_usd',
  'saved_provider_cache_usd', 'compaction_saved_tokens', 'cache_status', 'compaction', 'route_reason', 'attempts', 'overhead_ms', 'upstream_ms', 'created_at',
  'usage_flags', 'surface',
] as const;

type MetadataRow = Pick<UsageRecordRow, (typeof METADATA)[number]>;

function toEntry(row: MetadataRow): RequestEntry {
  return { ...row, stream: row.stream === 1, attempts: parseAttempts(row.attempts), created_at: new Date(row.created_at).toISOString() };
}

/** The stored attempts (written by the usage stage from Call.attempts: camelCase) in the API's snake_case. */
function parseAttempts(json: string | null): RequestEntry['attempts'] {
  if (json === null) return null;
  const list = JSON.parse(json) as { model: string; status: number; errorCode?: string; ms: number }[];
  return list.map((a) => ({ model: a.model, status: a.status, error_code: a.errorCode ?? null, ms: Math.round(a.ms * 100) / 100 }));
}

export function encodeCursor(createdAt: number, requestId: string): string {
  return Buffer.from(`${createdAt}.${requestId}`).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; requestId: string } {
  const text = /^[A-Za-z0-9_-]{1,400}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const m = /^(\d{1,15})\.([^\u0000]{1,200})$/s.exec(text);
  if (!m) throw fieldProblem('invalid_cursor', 'cursor', 'cursor is not one this API returned; start again without it.');
  return { createdAt: Number(m[1]), requestId: m[2]! };
}

/** The cache outcomes a record can have (CacheStatus), as the `cache_status` filter takes them. */
export const CACHE_STATUSES = ['hit', 'miss', 'dedup', 'bypass', 'partial'] as const satisfies readonly CacheStatus[];

/**
 * The `status` filter: `ok` (2xx), `error` (anything else), `4xx`, `5xx`, or
 * one status code. `errors` marks the filters that only match errors: those
 * are served by the index of the errors alone.
 */
export interface StatusFilter {
  errors: boolean;
  /** Inclusive; absent for `error` (which is two ranges, below and above 2xx). */
  min?: number;
  max?: number;
}

/** The request log's filters: the usage totals' (usage-filters.ts), and status and cache outcome. */
export interface RequestFilter extends UsageFilter {
  status?: StatusFilter | undefined;
  cacheStatus?: CacheStatus | undefined;
}

export interface RequestQuery extends UsageQuery {
  status?: string | undefined;
  cache_status?: string | undefined;
}

const STATUS_HELP = 'status must be ok (2xx), error (any other), 4xx, 5xx or one HTTP status code such as 429.';

export function parseStatus(value: string | undefined): StatusFilter | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'ok') return { errors: false, min: 200, max: 299 };
  if (value === 'error') return { errors: true };
  const hundreds = /^([45])xx$/.exec(value)?.[1];
  if (hundreds) return { errors: true, min: Number(hundreds) * 100, max: Number(hundreds) * 100 + 99 };
  if (/^[1-5]\d\d$/.test(value)) {
    const code = Number(value);
    return { errors: code < 200 || code > 299, min: code, max: code };
  }
  throw fieldProblem('invalid_status', 'status', STATUS_HELP);
}

export function parseCacheStatus(value: string | undefined): CacheStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if ((CACHE_STATUSES as readonly string[]).includes(value)) return value as CacheStatus;
  throw fieldProblem('invalid_cache_status', 'cache_status', 'cache_status must be hit, miss, dedup, bypass or partial.');
}

/**
 * The request log's filter from a query string (the API's and the console's
 * alike). An empty value is no filter (a GET form sends its empty fields).
 * Every bad field is named at once: one 400 listing each.
 */
export function requestFilter(tenantId: string, query: RequestQuery, now: number): RequestFilter {
  const given = Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined && v !== '')) as RequestQuery;
  const problems: HttpProblem[] = [];
  const collect = <T>(parse: () => T): T | undefined => {
    try {
      return parse();
    } catch (err) {
      if (!(err instanceof HttpProblem)) throw err;
      problems.push(err);
      return undefined;
    }
  };
  collect(() => parseTime(given.from, 'from'));
  collect(() => parseTime(given.to, 'to'));
  const base = problems.length === 0 ? collect(() => usageFilter(tenantId, given, now)) : undefined;
  const status = collect(() => parseStatus(given.status));
  const cacheStatus = collect(() => parseCacheStatus(given.cache_status));
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) {
    throw new HttpProblem(400, problems[0]!.code, problems.map((p) => p.message).join(' '), { errors: problems.flatMap((p) => p.errors ?? []) });
  }
  return { ...base!, status, cacheStatus };
}

/**
 * Not 2xx, written exactly as the partial index usage_records_tenant_errors
 * is (SQLite uses a partial index only for a query that repeats its
 * condition; PostgreSQL proves it either way).
 */
const ERROR_STATUS = sql<SqlBool>`(status < 200 or status > 299)`;

type Where = (eb: ExpressionBuilder<GatewayTables, 'usage_records'>) => Expression<SqlBool>;

/**
 * The filter as conditions: the usage filters' (usage-filters.ts) but for
 * the model, and status and cache outcome. Not usageWhere itself: the time
 * range is one BETWEEN (`to` is exclusive, times whole milliseconds), ending
 * at the cursor on a later page. Without statistics, SQLite (3.53 in Node 24) weighs a
 * range written as `>=` and `<` so that the time index wins over a filter's
 * own index, and then reads every record of the range to find a rare value
 * (300 ms on a million); a BETWEEN range it weighs as the filter's index
 * deserves (the plans are checked in test/gateway/control/request-log.test.ts).
 */
function logWhere(filter: RequestFilter, until: number): Where {
  return (eb) => {
    const conditions: Expression<SqlBool>[] = [eb('tenant_id', '=', filter.tenantId), eb.between('created_at', filter.from, until)];
    if (filter.tag !== undefined) conditions.push(eb('tag', '=', filter.tag));
    if (filter.sessionId !== undefined) conditions.push(eb('session_id', '=', filter.sessionId));
    if (filter.keyId !== undefined) conditions.push(eb('key_id', '=', filter.keyId));
    const status = filter.status;
    if (status?.errors) conditions.push(ERROR_STATUS);
    if (status?.min !== undefined && status.min === status.max) conditions.push(eb('status', '=', status.min));
    else if (status?.min !== undefined && status.max !== undefined) conditions.push(eb('status', '>=', status.min), eb('status', '<=', status.max));
    if (filter.cacheStatus !== undefined) conditions.push(eb('cache_status', '=', filter.cacheStatus));
    return eb.and(conditions);
  };
}

/**
 * The query of one page, `limit` rows at most, after `cursor` if given
 * (decoded: a bad one is a 400 naming it). A model filter matches the model
 * asked for or the one that answered: an OR that the planners answer by
 * sorting every match. Instead, one index scan per column, each newest
 * first and cut at a page, merged by the database (in its own collation,
 * as the cursor compares).
 */
export function requestPageQuery(db: GatewayDb, filter: RequestFilter, cursor: string | undefined, limit: number) {
  const after = cursor === undefined || cursor === '' ? undefined : decodeCursor(cursor);
  const branch = (where?: Where) => {
    let query = db
      .selectFrom('usage_records')
      .select(METADATA)
      .where(logWhere(filter, Math.min(filter.to - 1, after?.createdAt ?? Number.MAX_SAFE_INTEGER)));
    if (where) query = query.where(where);
    // The range already ends at the cursor's millisecond; this only orders that millisecond's ties.
    if (after) query = query.where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb('request_id', '<', after.requestId)]));
    return query.orderBy('created_at', 'desc').orderBy('request_id', 'desc').limit(limit);
  };
  const model = filter.model;
  if (model === undefined) return branch();
  const used = branch((eb) => eb('model_used', '=', model));
  const asked = branch((eb) => eb.and([eb('model_requested', '=', model), eb.or([eb('model_used', 'is', null), eb('model_used', '!=', model)])]));
  return db
    .selectFrom((eb) => eb.selectFrom(used.as('used')).selectAll().unionAll(eb.selectFrom(asked.as('asked')).selectAll()).as('both'))
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('request_id', 'desc')
    .limit(limit);
}

export async function listRequests(
  deps: Pick<GatewayDeps, 'db'>,
  filter: RequestFilter,
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<{ requests: RequestEntry[]; next_cursor: string | null }> {
  const limit = page.limit ?? DEFAULT_PAGE;
  // One more than a page: whether there is a next page, without a count.
  const rows: MetadataRow[] = await requestPageQuery(deps.db, filter, page.cursor, limit + 1).execute();
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows.at(-1);
  return { requests: pageRows.map(toEntry), next_cursor: more && last ? encodeCursor(last.created_at, last.request_id) : null };
}

/**
 * The tenant's API keys a request-log filter can name: every live key, and
 * the revoked ones that some record names; live keys first, then by name.
 * Whether a record names a key is one probe of the key index per key, the
 * newest such record: a scalar subquery, whose ORDER BY and LIMIT the
 * planners keep (an EXISTS they would answer with a scan that stops at the
 * first match, which reads the whole table for a key no record names).
 */
export async function requestLogKeys(
  deps: Pick<GatewayDeps, 'db'>,
  tenantId: string,
): Promise<{ id: string; name: string; prefix: string; revoked_at: string | null }[]> {
  const rows = await deps.db
    .selectFrom('api_keys as k')
    .select(['k.id', 'k.name', 'k.prefix', 'k.revoked_at'])
    .select((eb) =>
      eb
        .selectFrom('usage_records as u')
        .select('u.created_at')
        .whereRef('u.tenant_id', '=', 'k.tenant_id')
        .whereRef('u.key_id', '=', 'k.id')
        .orderBy('u.created_at', 'desc')
        .limit(1)
        .as('last_record_at'),
    )
    .where('k.tenant_id', '=', tenantId)
    .orderBy('k.name')
    .orderBy('k.id')
    .execute();
  const keys = rows
    .filter((r) => r.revoked_at === null || r.last_record_at !== null)
    .map((r) => ({ id: r.id, name: r.name, prefix: r.prefix, revoked_at: r.revoked_at === null ? null : new Date(r.revoked_at).toISOString() }));
  return [...keys.filter((k) => k.revoked_at === null), ...keys.filter((k) => k.revoked_at !== null)];
}

/** One record of the tenant's, with its bodies when the tenant stores them; another tenant's is 404 like none. */
export async function getRequest(deps: Pick<GatewayDeps, 'db'>, tenantId: string, requestId: string): Promise<RequestDetail> {
  const row = await deps.db
    .selectFrom('usage_records')
    .select([...METADATA, 'request_body', 'response_body', 'body_storage'])
    .where('tenant_id', '=', tenantId)
    .where('request_id', '=', requestId)
    .executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'request_not_found', 'No request with this id belongs to this tenant.');
  // A record from before body_storage existed that kept bodies kept them whole.
  const storage = row.body_storage ?? (row.request_body !== null || row.response_body !== null ? 'stored' : null);
  return { ...toEntry(row), request_body: row.request_body, response_body: row.response_body, body_storage: storage };
}
