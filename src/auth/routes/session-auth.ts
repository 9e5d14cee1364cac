import type { FastifyRequest } from 'fastify';
import { HttpProblem } from '../../platform/errors.ts';
import { bearerToken } from '../../platform/http.ts';
import type { AuthDeps } from '../deps.ts';
import { findSession, type LiveSession } from '../sessions.ts';

/**
 * The live session a request is made with (`Authorization: Bearer ses_…`),
 * for the routes a user reaches through a product with their session:
 * tokens, sessions, grants. Missing, expired, revoked or unknown: 401
 * invalid_session.
 */
export async function requireLiveSession(deps: Pick<AuthDeps, 'db' | 'clock'>, request: FastifyRequest): Promise<LiveSession> {
  const token = bearerToken(request);
  const session = token ? await findSession(deps, token) : null;
  if (!session) throw new HttpProblem(401, 'invalid_session', 'Send a live session token as "Authorization: Bearer <token>".');
  return session;
}
