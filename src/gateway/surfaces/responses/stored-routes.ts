import { Type } from 'typebox';
import { HttpProblem } from '../../../platform/errors.ts';
import type { App } from '../../../platform/http.ts';
import type { ResponseStore } from './store.ts';

/** An id as the path carries it: the router already refuses a segment over 100 characters. */
const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** A list of what to include (OpenAI's `include`, repeated or as `include[]`): accepted, bounded, and moot here, since every item is kept whole. */
const Include = Type.Union([Type.String({ maxLength: 100 }), Type.Array(Type.String({ maxLength: 100 }), { maxItems: 32 })]);

const ListQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ maxLength: 256 })),
    limit: Type.Optional(Type.String({ maxLength: 16 })),
    order: Type.Optional(Type.String({ maxLength: 16 })),
    include: Type.Optional(Include),
    'include[]': Type.Optional(Include),
  },
  // Other parameters are ignored, as OpenAI's API ignores them.
  { additionalProperties: true },
);

/** 404 as OpenAI answers an id it does not have: the same for another tenant's, an expired and a deleted response. */
const responseNotFound = (id: string) =>
  new HttpProblem(404, 'not_found', `No response found with id '${id}'.`, { type: 'invalid_request_error' });

const invalidValue = (param: string, message: string) => new HttpProblem(400, 'invalid_value', message, { type: 'invalid_request_error', param });

/** OpenAI's `limit`: 1 to 100, 20 when not given. */
function pageLimit(raw: string | undefined): number {
  if (raw === undefined) return 20;
  const n = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= 100)) throw invalidValue('limit', "Invalid 'limit': it must be an integer from 1 to 100.");
  return n;
}

function pageOrder(raw: string | undefined): 'asc' | 'desc' {
  if (raw === undefined || raw === 'desc') return 'desc';
  if (raw === 'asc') return 'asc';
  throw invalidValue('order', "Invalid 'order': supported values are 'asc' and 'desc'.");
}

/**
 * The stored responses of the Responses API (store.ts), each route scoped
 * to the key's tenant: `GET /v1/responses/{id}` (the response object),
 * `DELETE /v1/responses/{id}`, and `GET /v1/responses/{id}/input_items`
 * (OpenAI's paginated list). In the data plane's scope: its API-key hook
 * and OpenAI's error shape.
 */
export async function storedResponseRoutes(scope: App, deps: { responses: ResponseStore }): Promise<void> {
  scope.get('/responses/:id', { schema: { summary: 'A stored response', params: Params } }, async (request) => {
    const response = await deps.responses.get(request.principal.tenantId, request.params.id);
    if (response === undefined) throw responseNotFound(request.params.id);
    return response;
  });

  scope.delete('/responses/:id', { schema: { summary: 'Delete a stored response', params: Params } }, async (request) => {
    const { id } = request.params;
    if (!(await deps.responses.delete(request.principal.tenantId, id))) throw responseNotFound(id);
    return { id, object: 'response.deleted', deleted: true };
  });

  scope.get(
    '/responses/:id/input_items',
    { schema: { summary: 'The input items a stored response was generated from, paginated', params: Params, querystring: ListQuery } },
    async (request) => {
      const { id } = request.params;
      const page = { after: request.query.after, limit: pageLimit(request.query.limit), order: pageOrder(request.query.order) };
      const list = await deps.responses.inputItems(request.principal.tenantId, id, page);
      if (list === undefined) throw responseNotFound(id);
      return list;
    },
  );
}
