import { fieldProblem, HttpProblem } from '../platform/errors.ts';
import type { GatewayDeps } from './deps.ts';
import type { UsageRecordRow } from './schema.ts';
import { type UsageFilter, usageWhere } from './usage-filters.ts';

/**
 * GET /api/v1/tenant/requests: a tenant's usage records, newest first, in
 * pages. The cursor is opaque to clients: base64url of `created_at.request_id`
 * of the last entry of the previous page; (created_at, request_id) is unique
 * and indexed with the tenant (usage_records_tenant_time).
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
  compaction_saved_tokens: number;
  cache_status: string;
  compaction: string;
  route_reason: string | null;
  /** Every upstream attempt when there were several (retries, fallbacks); null for one. */
  attempts: { model: string; status: number; error_code: string | null; ms: number }[] | null;
  overhead_ms: number;
  upstream_ms: number;
  created_at: string;
}

export type RequestDetail = RequestEntry & { request_body: string | null; response_body: string | null };

const METADATA = [
  'request_id', 'key_id', 'session_id', 'tag', 'model_requested', 'model_used', 'provider', 'status', 'error_code', 'stream',
  'prompt_tokens', 'cached_tokens', 'cache_write_tokens', 'completion_tokens', 'reasoning_tokens', 'saved_tokens',
  'cost_usd', 'cost_saved_usd', 'saved_cache_usd', 'saved_compaction_usd', 'saved_routing_usd', 'saved_prompt_cache_usd',
  'compaction_saved_tokens', 'cache_status', 'compaction', 'route_reason', 'attempts', 'overhead_ms', 'upstream_ms', 'created_at',
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

export async function listRequests(
  deps: Pick<GatewayDeps, 'db'>,
  filter: UsageFilter,
  page: { limit?: number | undefined; cursor?: string | undefined },
): Promise<{ requests: RequestEntry[]; next_cursor: string | null }> {
  const limit = page.limit ?? DEFAULT_PAGE;
  const after = page.cursor ? decodeCursor(page.cursor) : undefined;
  let query = deps.db.selectFrom('usage_records').select(METADATA).where(usageWhere(filter));
  if (after) {
    query = query.where((eb) =>
      eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('request_id', '<', after.requestId)])]),
    );
  }
  // One more than a page: whether there is a next page, without a count.
  const rows = await query.orderBy('created_at', 'desc').orderBy('request_id', 'desc').limit(limit + 1).execute();
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows.at(-1);
  return { requests: pageRows.map(toEntry), next_cursor: more && last ? encodeCursor(last.created_at, last.request_id) : null };
}

/** One record of the tenant's, with its bodies when the tenant stores them; another tenant's is 404 like none. */
export async function getRequest(deps: Pick<GatewayDeps, 'db'>, tenantId: string, requestId: string): Promise<RequestDetail> {
  const row = await deps.db
    .selectFrom('usage_records')
    .select([...METADATA, 'request_body', 'response_body'])
    .where('tenant_id', '=', tenantId)
    .where('request_id', '=', requestId)
    .executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'request_not_found', 'No request with this id belongs to this tenant.');
  return { ...toEntry(row), request_body: row.request_body, response_body: row.response_body };
}
