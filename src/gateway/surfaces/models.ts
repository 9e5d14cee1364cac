import { Type } from 'typebox';
import { HttpProblem } from '../../platform/errors.ts';
import type { App } from '../../platform/http.ts';
import { listedEmbeddingModels, listedModels } from '../catalog/catalog.ts';
import type { CatalogModel } from '../catalog/models.ts';
import { autoModelListing } from '../routing/auto-model.ts';
import { type ServeDeps, tenantOf } from './serve-call.ts';

/** A model in OpenAI's list shape, with the catalog's context window and prices. */
function openAiModel(m: CatalogModel): Record<string, unknown> {
  return {
    id: `${m.provider}/${m.id}`,
    object: 'model',
    created: Math.floor(Date.parse(m.pricesRead) / 1000),
    owned_by: m.provider,
    context_window: m.contextWindow,
    pricing: {
      currency: 'USD',
      unit: 'per_million_tokens',
      input: m.input,
      cached_input: m.cachedInput,
      ...(m.cacheWrite === undefined ? {} : { cache_write: m.cacheWrite }),
      output: m.output,
      read_on: m.pricesRead,
    },
  };
}

/**
 * A model in Anthropic's shape (Models API: `{type, id, display_name,
 * created_at}`): Anthropic's models by their own ids, as Claude Code names
 * them; the other providers' as `provider/model`, which the gateway also
 * takes in a Messages request.
 */
function anthropicModel(m: CatalogModel): Record<string, unknown> {
  const id = m.provider === 'anthropic' ? m.id : `${m.provider}/${m.id}`;
  return { type: 'model', id, display_name: id, created_at: new Date(Date.parse(m.pricesRead)).toISOString() };
}

const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })),
    after_id: Type.Optional(Type.String({ maxLength: 300 })),
    before_id: Type.Optional(Type.String({ maxLength: 300 })),
  },
  { additionalProperties: true },
);

const modelNotListed = (id: string) =>
  new HttpProblem(404, 'model_not_found', `The model "${id}" is not among your models; GET /v1/models lists them.`, {
    type: 'invalid_request_error',
    param: 'model',
  });

/**
 * GET /v1/models and /v1/models/{id}: OpenAI's list shape, or Anthropic's
 * (with its `limit`, `after_id` and `before_id` paging) when the request
 * carries `anthropic-version`, as every Anthropic client does. Embedding
 * models are in OpenAI's shape only: Anthropic's clients list models to chat with.
 */
export async function modelRoutes(app: App, deps: Pick<ServeDeps, 'tenants'>): Promise<void> {
  app.get(
    '/models',
    {
      schema: {
        summary: "Models of the providers this tenant has keys for (in Anthropic's list shape when the request carries anthropic-version)",
        querystring: ListQuery,
      },
    },
    async (request) => {
      const tenant = await tenantOf(deps, request.principal.tenantId);
      const models = listedModels(tenant.keyed);
      if (request.headers['anthropic-version'] === undefined) {
        // The embedding models last: an OpenAI client lists them, an Anthropic one (a chat client) does not.
        return { object: 'list', data: autoModelListing(models).concat(models.map(openAiModel), listedEmbeddingModels(tenant.keyed).map(openAiModel)) };
      }
      return anthropicPage(models.map(anthropicModel), request.query);
    },
  );
  app.get(
    '/models/:id',
    { schema: { summary: 'One model of the providers this tenant has keys for', params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 300 }) }) } },
    async (request) => {
      const tenant = await tenantOf(deps, request.principal.tenantId);
      const { id } = request.params;
      const anthropic = request.headers['anthropic-version'] !== undefined;
      const found =
        listedModels(tenant.keyed).find((m) => `${m.provider}/${m.id}` === id || (anthropic && m.provider === 'anthropic' && m.id === id)) ??
        (anthropic ? undefined : listedEmbeddingModels(tenant.keyed).find((m) => `${m.provider}/${m.id}` === id));
      if (found === undefined) throw modelNotListed(id);
      return anthropic ? anthropicModel(found) : openAiModel(found);
    },
  );
}

/** One page of Anthropic's list: `limit` (1 to 1000, default 20) after `after_id` or before `before_id`. */
function anthropicPage(all: Record<string, unknown>[], query: { limit?: string; after_id?: string; before_id?: string }) {
  const limit = Math.min(1000, Math.max(1, Number(query.limit ?? 20)));
  let start = 0;
  let end = all.length;
  if (query.after_id !== undefined) start = all.findIndex((m) => m['id'] === query.after_id) + 1;
  if (query.before_id !== undefined) {
    const at = all.findIndex((m) => m['id'] === query.before_id);
    end = at < 0 ? all.length : at;
    start = Math.max(0, end - limit);
  }
  const data = all.slice(start, Math.min(end, start + limit));
  return {
    data,
    has_more: query.before_id !== undefined ? start > 0 : start + data.length < end,
    first_id: data[0]?.['id'] ?? null,
    last_id: data.at(-1)?.['id'] ?? null,
  };
}
