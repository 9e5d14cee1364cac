import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomToken, sha256 } from '../../platform/crypto.ts';
import { HttpProblem } from '../../platform/errors.ts';
import type { GatewayDeps } from '../deps.ts';
import { createSession, revokeSession, tenantForSession } from '../control-plane/gateway-sessions.ts';
import type { CsrfBinding } from './csrf.ts';

/**
 * The console's browser session: a cookie holding a control-plane session
 * token (gateway-sessions.ts, the same `gws_` sessions the API takes as a
 * Bearer token; no second store). HttpOnly and SameSite=Lax always; in
 * production also Secure with the `__Host-` prefix (host-only, path /, never
 * set over http), so a sibling subdomain cannot plant or read it. Before
 * sign-in, a pre-session cookie of random bytes binds the sign-in forms'
 * CSRF tokens (csrf.ts).
 */
export interface ConsoleCookies {
  session: string;
  preSession: string;
  options: { path: '/'; httpOnly: true; sameSite: 'lax'; secure: boolean };
}

export function consoleCookies(production: boolean): ConsoleCookies {
  const prefix = production ? '__Host-' : '';
  return {
    session: `${prefix}gw_console`,
    preSession: `${prefix}gw_console_pre`,
    options: { path: '/', httpOnly: true, sameSite: 'lax', secure: production },
  };
}

/** The signed-in tenant of a console request, and what its forms' CSRF tokens are bound to. */
export interface ConsoleSession {
  tenantId: string;
  binding: CsrfBinding;
}

/** The browser's live console session, or null (no cookie, or a session expired, ended or unknown). */
export async function readConsoleSession(deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'log'>, cookies: ConsoleCookies, request: FastifyRequest): Promise<ConsoleSession | null> {
  const token = request.cookies[cookies.session];
  if (!token) return null;
  try {
    const tenantId = await tenantForSession(deps, token);
    return { tenantId, binding: { kind: 'session', sessionHash: sha256(token) } };
  } catch (err) {
    if (err instanceof HttpProblem && err.status === 401) return null;
    throw err;
  }
}

/**
 * Puts an issued session (a magic link's) in the browser: the cookie, in
 * place of the session the browser had, which is ended (no fixation, no
 * orphans); the pre-session cookie has done its work.
 */
export async function setConsoleSession(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'background'>,
  request: FastifyRequest,
  reply: FastifyReply,
  session: { token: string; expiresAt: number },
): Promise<void> {
  const cookies = consoleCookies(deps.config.production);
  const previous = request.cookies[cookies.session];
  if (previous && previous !== session.token) await revokeSession(deps, previous);
  reply.setCookie(cookies.session, session.token, { ...cookies.options, expires: new Date(session.expiresAt) });
  reply.clearCookie(cookies.preSession, cookies.options);
}

/**
 * Signs a browser in to the console as `tenantId`: a fresh control-plane
 * session (GATEWAY_SESSION_TTL_DAYS) in the cookie. For a sign-in method
 * that has already established who the person is and which workspace is
 * theirs (the account service's OAuth sign-in calls this, from a route
 * given as ConsoleOptions.signInRoutes); the caller then redirects to `/`.
 * `accountsGrant`: that sign-in's refresh token, kept with the session and
 * rechecked at the account service (accounts-session-grants.ts).
 */
export async function startConsoleSession(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'background'>,
  request: FastifyRequest,
  reply: FastifyReply,
  tenantId: string,
  accountsGrant?: string,
): Promise<void> {
  const grant = accountsGrant === undefined ? undefined : { refreshToken: accountsGrant, key: deps.config.encryptionKey };
  const session = await createSession(deps.db, deps.clock, deps.config.sessionTtlMs, tenantId, grant);
  await setConsoleSession(deps, request, reply, session);
}

/** Ends the session server-side (not only in this browser) and clears the cookie. */
export async function endConsoleSession(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'background'>,
  cookies: ConsoleCookies,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const token = request.cookies[cookies.session];
  if (token) await revokeSession(deps, token);
  reply.clearCookie(cookies.session, cookies.options);
}

const PRE_SESSION = /^pre_[A-Za-z0-9_-]{43}$/;

/** The pre-session binding of a sign-in page: the cookie's value, set fresh when absent or malformed. */
export function preSessionBinding(cookies: ConsoleCookies, request: FastifyRequest, reply: FastifyReply): CsrfBinding {
  const existing = request.cookies[cookies.preSession];
  if (existing && PRE_SESSION.test(existing)) return { kind: 'pre-session', value: existing };
  const value = randomToken('pre_');
  reply.setCookie(cookies.preSession, value, cookies.options);
  return { kind: 'pre-session', value };
}

/** The pre-session binding a posted sign-in form is checked against (never set here: a post without the cookie fails). */
export function postedPreSession(cookies: ConsoleCookies, request: FastifyRequest): CsrfBinding | undefined {
  const value = request.cookies[cookies.preSession];
  return value && PRE_SESSION.test(value) ? { kind: 'pre-session', value } : undefined;
}
