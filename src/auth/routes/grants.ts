import { Type } from 'typebox';
import type { App } from '../../platform/http.ts';
import type { AuthDeps } from '../deps.ts';
import { listUserGrants, revokeUserGrant } from '../oauth/user-grants.ts';
import { requireLiveSession } from './session-auth.ts';

const Grant = Type.Object({
  client_id: Type.String(),
  client_name: Type.String(),
  client_host: Type.Union([Type.String(), Type.Null()]),
  scope: Type.String({ description: 'Space-separated: every scope granted to the application.' }),
  granted_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When the application last obtained tokens (its sign-in or a refresh).',
  }),
});

/** The OAuth applications the user consented to: X-Api-Key (checked by the enclosing scope) plus the user's Bearer session. */
export async function grantRoutes(app: App, deps: AuthDeps): Promise<void> {
  app.get(
    '/v1/grants',
    {
      schema: {
        summary: 'The applications the user let act on their behalf',
        response: { 200: Type.Object({ grants: Type.Array(Grant) }) },
      },
    },
    async (request, reply) => {
      const session = await requireLiveSession(deps, request);
      return reply.header('cache-control', 'no-store').send({ grants: await listUserGrants(deps, session.user.id) });
    },
  );

  app.delete(
    '/v1/grants/:client_id',
    {
      schema: {
        summary: 'Forget the consent and revoke every token and code of the application for this user (idempotent)',
        // No control characters (PostgreSQL text cannot hold NUL; no client_id has any).
        params: Type.Object({ client_id: Type.String({ minLength: 1, maxLength: 2048, pattern: '^\\P{Cc}+$' }) }),
      },
    },
    async (request, reply) => {
      const session = await requireLiveSession(deps, request);
      await revokeUserGrant(deps, session.user.id, request.params.client_id);
      return reply.status(204).send();
    },
  );
}
