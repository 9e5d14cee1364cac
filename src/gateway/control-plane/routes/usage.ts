import { Type } from 'typebox';
import { fieldProblem } from '../../../platform/errors.ts';
import type { App } from '../../../platform/http.ts';
import type { GatewayDeps } from '../../deps.ts';
import { getRequest, listRequests, MAX_PAGE, requestFilter } from '../../usage/request-log.ts';
import { TenantSettings, TenantSettingsPatch } from '../tenant-settings.ts';
import { getTenant, updateTenant } from '../tenants.ts';
import { usageFilter } from '../../usage/usage-filters.ts';
import { MAX_HOURLY_DAYS, usageReport } from '../../usage/usage-queries.ts';

const TenantSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  email: Type.String(),
  email_status: Type.Union([Type.Literal('confirmed'), Type.Literal('unconfirmed'), Type.Literal('released')], {
    description: 'unconfirmed: created through the API, its address not proven yet (no sign-in reaches it); released: it holds no address any more.',
  }),
  store_bodies: Type.Boolean({ description: 'Keep prompt and completion bodies in the request log (off by default).' }),
  settings: TenantSettings,
  created_at: Type.String({ format: 'date-time' }),
});

const Filters = {
  from: Type.Optional(Type.String({ maxLength: 64, description: 'Inclusive; ISO 8601 or epoch milliseconds. Default: `to` minus 30 days.' })),
  to: Type.Optional(Type.String({ maxLength: 64, description: 'Exclusive; ISO 8601 or epoch milliseconds. Default: now.' })),
  tag: Type.Optional(Type.String({ maxLength: 256 })),
  session_id: Type.Optional(Type.String({ maxLength: 256 })),
  model: Type.Optional(Type.String({ maxLength: 256, description: 'The model asked for, or the provider/model that answered.' })),
  key_id: Type.Optional(Type.String({ maxLength: 64 })),
};

const Totals = {
  requests: Type.Integer(),
  errors: Type.Integer({ description: 'Calls answered with a status of 400 or more.' }),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  tokens_saved: Type.Integer(),
  cost_usd: Type.Number(),
  cost_saved_usd: Type.Number({ description: "The gateway's saving: the five saved_*_usd above saved_provider_cache_usd together." }),
  cost_without_gateway_usd: Type.Number({ description: 'What the same calls would have cost without the gateway: cost_usd + cost_saved_usd.' }),
  saved_cache_usd: Type.Number({ description: 'Response-cache hits.' }),
  saved_dedup_usd: Type.Number({ description: 'In-flight dedups (identical calls answered by one upstream call).' }),
  saved_compaction_usd: Type.Number(),
  saved_routing_usd: Type.Number(),
  saved_prompt_cache_usd: Type.Number({ description: 'What the prompt-cache breakpoints the gateway added earned, net of the write premium they caused.' }),
  saved_provider_cache_usd: Type.Number({
    description: "What the provider's own prompt caching saved that the gateway does not claim (automatic caching, breakpoints the client placed): not in cost_saved_usd.",
  }),
  cache_hits: Type.Integer(),
  dedup_hits: Type.Integer(),
  cache_misses: Type.Integer(),
  cache_hit_rate: Type.Union([Type.Number(), Type.Null()], {
    description: '(cache_hits + dedup_hits) / (cache_hits + dedup_hits + cache_misses): calls that bypassed the cache are left out; null when none could use it.',
  }),
};

const Percentiles = Type.Object({ p50: Type.Union([Type.Number(), Type.Null()]), p95: Type.Union([Type.Number(), Type.Null()]), p99: Type.Union([Type.Number(), Type.Null()]) });

const Entry = {
  request_id: Type.String(),
  key_id: Type.String(),
  session_id: Type.Union([Type.String(), Type.Null()]),
  tag: Type.Union([Type.String(), Type.Null()]),
  model_requested: Type.String(),
  model_used: Type.Union([Type.String(), Type.Null()]),
  provider: Type.Union([Type.String(), Type.Null()]),
  status: Type.Integer(),
  error_code: Type.Union([Type.String(), Type.Null()]),
  stream: Type.Boolean(),
  prompt_tokens: Type.Integer(),
  cached_tokens: Type.Integer(),
  cache_write_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  reasoning_tokens: Type.Integer(),
  saved_tokens: Type.Integer(),
  cost_usd: Type.Number(),
  cost_saved_usd: Type.Number(),
  saved_cache_usd: Type.Number({ description: 'A cache hit or dedup: the cost of the reused answer.' }),
  saved_compaction_usd: Type.Number(),
  saved_routing_usd: Type.Number(),
  saved_prompt_cache_usd: Type.Number({ description: 'What the prompt-cache breakpoints the gateway added earned.' }),
  saved_provider_cache_usd: Type.Number({ description: "What the provider's own prompt caching saved: not in cost_saved_usd." }),
  compaction_saved_tokens: Type.Integer(),
  cache_status: Type.String(),
  compaction: Type.String(),
  route_reason: Type.Union([Type.String(), Type.Null()]),
  attempts: Type.Union([
    Type.Array(Type.Object({ model: Type.String(), status: Type.Integer(), error_code: Type.Union([Type.String(), Type.Null()]), ms: Type.Number() })),
    Type.Null(),
  ]),
  overhead_ms: Type.Number(),
  upstream_ms: Type.Number(),
  created_at: Type.String({ format: 'date-time' }),
  usage_flags: Type.Union([Type.String(), Type.Null()], {
    description:
      "Null when the token counts are the provider's own; else comma-separated: clamped (the provider reported a count that was not a whole number from 0 to 10^9; it was clamped), estimated (a stream ended before the provider's usage: the gateway counted the prompt and the completion relayed).",
  }),
};

function pageLimit(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d{1,4}$/.test(raw) || n < 1 || n > MAX_PAGE) throw fieldProblem('invalid_limit', 'limit', `limit must be an integer from 1 to ${MAX_PAGE}.`);
  return n;
}

/** The tenant itself, its usage totals and its request log. */
export async function controlUsageRoutes(app: App, deps: GatewayDeps): Promise<void> {
  app.get(
    '/api/v1/tenant',
    { schema: { summary: "The session's workspace", response: { 200: TenantSchema } } },
    async (request) => getTenant(deps, request.tenantId),
  );

  app.patch(
    '/api/v1/tenant',
    {
      schema: {
        summary: 'Rename the workspace, turn body storage on or off, or change pipeline settings (each section sent replaces the stored one; null resets it)',
        body: Type.Object({
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          store_bodies: Type.Optional(Type.Boolean()),
          settings: Type.Optional(TenantSettingsPatch),
        }),
        response: { 200: TenantSchema },
      },
    },
    async (request) =>
      updateTenant(deps, request.tenantId, {
        name: request.body.name,
        storeBodies: request.body.store_bodies,
        settings: request.body.settings,
      }),
  );

  app.get(
    '/api/v1/tenant/usage',
    {
      schema: {
        summary: 'Usage totals over a time range, filtered, optionally grouped (days and hours in UTC), with latency percentiles',
        querystring: Type.Object({
          ...Filters,
          group_by: Type.Optional(
            Type.Union(['tag', 'session', 'model', 'model_requested', 'key', 'day', 'hour'].map((g) => Type.Literal(g)), {
              description: `model: the model that answered (else the one asked for); model_requested: the model as the client named it; hour: ranges of at most ${MAX_HOURLY_DAYS} days.`,
            }),
          ),
        }),
        response: {
          200: Type.Object({
            from: Type.String({ format: 'date-time' }),
            to: Type.String({ format: 'date-time' }),
            totals: Type.Object(Totals),
            groups: Type.Optional(
              Type.Array(
                Type.Object({
                  key: Type.Union([Type.String(), Type.Null()]),
                  name: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: "group_by=key: the key's name." })),
                  ...Totals,
                }),
              ),
            ),
            latency: Type.Union(
              [Type.Object({ calls: Type.Integer(), total_ms: Percentiles, overhead_ms: Percentiles }), Type.Null()],
              { description: 'Estimated from buckets of 10 a decade (at most 26% off); null when a tag, session_id, model or key_id filter is given.' },
            ),
          }),
        },
      },
    },
    async (request) => {
      const { group_by, ...filters } = request.query;
      // An empty value (`tag=`) is no filter, as a GET form sends it (the request log reads it so too).
      const given = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== ''));
      return usageReport(deps, usageFilter(request.tenantId, given, deps.clock.now()), group_by as Parameters<typeof usageReport>[2]);
    },
  );

  app.get(
    '/api/v1/tenant/requests',
    {
      schema: {
        summary: 'The request log, newest first, in pages (metadata; bodies only on the single-request view)',
        querystring: Type.Object({
          ...Filters,
          status: Type.Optional(Type.String({ maxLength: 8, description: '`ok` (2xx), `error` (any other), `4xx`, `5xx`, or one status code (`429`).' })),
          cache_status: Type.Optional(Type.String({ maxLength: 8, description: '`hit`, `miss`, `dedup`, `bypass` or `partial` (embeddings answered in part from the cache).' })),
          limit: Type.Optional(Type.String({ maxLength: 8, description: `1 to ${MAX_PAGE}; default 50.` })),
          cursor: Type.Optional(Type.String({ maxLength: 512, description: 'next_cursor of the previous page.' })),
        }),
        response: { 200: Type.Object({ requests: Type.Array(Type.Object(Entry)), next_cursor: Type.Union([Type.String(), Type.Null()]) }) },
      },
    },
    async (request) => {
      const { limit, cursor, ...filters } = request.query;
      return listRequests(deps, requestFilter(request.tenantId, filters, deps.clock.now()), { limit: pageLimit(limit), cursor });
    },
  );

  app.get(
    '/api/v1/tenant/requests/:request_id',
    {
      schema: {
        summary: 'One request, with its bodies when the workspace stores them',
        params: Type.Object({ request_id: Type.String({ maxLength: 256 }) }),
        response: {
          200: Type.Object({
            ...Entry,
            request_body: Type.Union([Type.String(), Type.Null()]),
            response_body: Type.Union([Type.String(), Type.Null()]),
            body_storage: Type.Union([Type.String(), Type.Null()], {
              description:
                'null: the workspace did not store bodies then; `stored`: kept whole; `request_truncated` and/or `response_truncated` (comma-separated): cut at GATEWAY_STORED_BODY_MAX_BYTES; `quota_full`: not kept, the workspace\'s stored bodies had reached GATEWAY_STORED_BODIES_QUOTA_BYTES; `not_sent`: not kept, the call reached no provider.',
            }),
          }),
        },
      },
    },
    async (request) => getRequest(deps, request.tenantId, request.params.request_id),
  );
}
