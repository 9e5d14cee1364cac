import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App } from '../../platform/http.ts';
import type { AuthDeps } from '../deps.ts';
import { createToken, listTokens, revokeToken } from '../tokens.ts';
import { requireLiveSession } from './session-auth.ts';

const TokenMetadata = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

/** Personal access tokens: X-Api-Key (checked by the enclosing scope) plus the user's Bearer session. */
export async function tokenRoutes(app: App, deps: AuthDeps): Promise<void> {
  const sessionUserId = async (request: FastifyRequest) => (await requireLiveSession(deps, request)).user.id;

  app.post(
    '/v1/tokens',
    {
      schema: {
        summary: 'Mint a personal access token (the plaintext is in this reply only)',
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 100 }),
          scope: Type.Optional(Type.String({ maxLength: 512, description: 'Space-separated; empty or missing means identity.' })),
          expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650, description: 'Default 365.' })),
        }),
        response: { 201: Type.Intersect([TokenMetadata, Type.Object({ token: Type.String() })]) },
      },
    },
    async (request, reply) => {
      const userId = await sessionUserId(request);
      const { name, scope, expires_in_days } = request.body;
      const created = await createToken(deps, userId, { name, scope, expiresInDays: expires_in_days });
      return reply.status(201).header('cache-control', 'no-store').send(created);
    },
  );

  app.get(
    '/v1/tokens',
    { schema: { summary: "The user's tokens (metadata only)", response: { 200: Type.Object({ tokens: Type.Array(TokenMetadata) }) } } },
    async (request) => ({ tokens: await listTokens(deps, await sessionUserId(request)) }),
  );

  app.delete(
    '/v1/tokens/:id',
    { schema: { summary: 'Revoke a token (idempotent)', params: Type.Object({ id: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      await revokeToken(deps, await sessionUserId(request), request.params.id);
      return reply.status(204).send();
    },
  );
}
