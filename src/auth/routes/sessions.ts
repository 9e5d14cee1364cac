import { Type } from 'typebox';
import type { App } from '../../platform/http.ts';
import type { AuthDeps } from '../deps.ts';
import { endUserSession, listUserSessions } from '../sessions.ts';
import { requireLiveSession } from './session-auth.ts';

const SessionInfo = Type.Object({
  id: Type.String({ description: 'Opaque; names the session, never signs anyone in.' }),
  device: Type.String({ description: 'A short label from the user agent, e.g. "Firefox on Linux".' }),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  ip: Type.String({ description: 'The address the session signed in from.' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'To the minute.' }),
  expires_at: Type.String({ format: 'date-time' }),
  current: Type.Boolean({ description: 'The session this request was made with.' }),
});

/** The user's sessions: X-Api-Key (checked by the enclosing scope) plus the user's Bearer session. */
export async function sessionRoutes(app: App, deps: AuthDeps): Promise<void> {
  app.get(
    '/v1/sessions',
    {
      schema: {
        summary: "The user's signed-in sessions, the current one marked",
        response: { 200: Type.Object({ sessions: Type.Array(SessionInfo) }) },
      },
    },
    async (request, reply) => {
      const session = await requireLiveSession(deps, request);
      return reply.header('cache-control', 'no-store').send({ sessions: await listUserSessions(deps, session.user.id, session.id) });
    },
  );

  app.delete(
    '/v1/sessions/:id',
    {
      schema: {
        summary: 'Sign a session out (idempotent; the same 204 for any id)',
        params: Type.Object({ id: Type.String({ maxLength: 64, pattern: '^[A-Za-z0-9-]+$', description: 'A session id from GET /v1/sessions.' }) }),
      },
    },
    async (request, reply) => {
      const session = await requireLiveSession(deps, request);
      await endUserSession(deps, session.user.id, request.params.id);
      return reply.status(204).send();
    },
  );
}
