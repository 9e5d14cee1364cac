import { Type } from 'typebox';
import type { App } from '../../../platform/http.ts';
import { createApiKey, KEY_NAME_MAX, listApiKeys, revokeApiKey, updateApiKey } from '../api-keys.ts';
import type { GatewayDeps } from '../../deps.ts';
import { deleteProviderKey, listProviderKeys, putProviderKey } from '../provider-keys.ts';
import { Limits } from '../../settings/limits.ts';

/** Before validation, which would drop an unknown limit silently. */
const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the key, to tell keys apart.' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  limits: Limits,
});

const ProviderKey = Type.Object({
  provider: Type.String(),
  base_url: Type.Union([Type.String(), Type.Null()]),
  key_last4: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

/** API keys and provider keys of the session's tenant (the enclosing scope resolved `request.tenantId`). */
export async function controlKeyRoutes(app: App, deps: GatewayDeps): Promise<void> {
  app.get(
    '/api/v1/tenant/api-keys',
    { schema: { summary: 'Live API keys (never the key itself)', response: { 200: Type.Object({ api_keys: Type.Array(ApiKey) }) } } },
    async (request) => ({ api_keys: await listApiKeys(deps, request.tenantId) }),
  );

  app.post(
    '/api/v1/tenant/api-keys',
    {
      schema: {
        summary: 'Create an API key (the key is in this reply only)',
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: KEY_NAME_MAX }), limits: Type.Optional(Limits) }),
        response: { 201: Type.Intersect([ApiKey, Type.Object({ key: Type.String() })]) },
      },
    },
    async (request, reply) => {
      const created = await createApiKey(deps, request.tenantId, request.body.name, request.body.limits);
      return reply.status(201).header('cache-control', 'no-store').send(created);
    },
  );

  app.delete(
    '/api/v1/tenant/api-keys/:id',
    { schema: { summary: 'Revoke an API key (idempotent; refused from the next request on)', params: Type.Object({ id: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      await revokeApiKey(deps, request.tenantId, request.params.id);
      return reply.status(204).send();
    },
  );

  app.patch(
    '/api/v1/tenant/api-keys/:id',
    {
      schema: {
        summary: "Rename a key, or replace its limits (null or {}: none; every replica applies them from the key's next request), or both",
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        body: Type.Object(
          {
            name: Type.Optional(Type.String({ minLength: 1, maxLength: KEY_NAME_MAX, description: 'Trimmed; not empty.' })),
            limits: Type.Optional(Type.Union([Limits, Type.Null()])),
          },
          { additionalProperties: false, description: 'At least one of name and limits.' },
        ),
        response: { 200: ApiKey },
      },
    },
    async (request) => updateApiKey(deps, request.tenantId, request.params.id, { name: request.body.name, limits: request.body.limits }),
  );

  app.get(
    '/api/v1/tenant/provider-keys',
    { schema: { summary: 'Stored provider keys (metadata only)', response: { 200: Type.Object({ provider_keys: Type.Array(ProviderKey) }) } } },
    async (request) => ({ provider_keys: await listProviderKeys(deps, request.tenantId) }),
  );

  app.post(
    '/api/v1/tenant/provider-keys',
    {
      schema: {
        summary: "Store (or replace) the tenant's key for a provider",
        body: Type.Object({
          provider: Type.String({ maxLength: 64 }),
          key: Type.String({ minLength: 1, maxLength: 4096 }),
          base_url: Type.Optional(Type.String({ maxLength: 2048, description: 'https; required for openai-compatible.' })),
        }),
        response: { 201: ProviderKey },
      },
    },
    async (request, reply) => {
      const { provider, key, base_url } = request.body;
      return reply.status(201).send(await putProviderKey(deps, request.tenantId, { provider, key, baseUrl: base_url }));
    },
  );

  app.delete(
    '/api/v1/tenant/provider-keys/:provider',
    { schema: { summary: 'Delete the key for a provider (idempotent)', params: Type.Object({ provider: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      await deleteProviderKey(deps, request.tenantId, request.params.provider);
      return reply.status(204).send();
    },
  );
}
