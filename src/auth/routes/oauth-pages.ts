import cookie from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomToken, safeEqual } from '../../platform/crypto.ts';
import { HttpProblem } from '../../platform/errors.ts';
import type { App } from '../../platform/http.ts';
import { login } from '../login.ts';
import {
  AuthorizePageError,
  AuthorizeRedirectError,
  checkAuthorizationRequest,
  consentCovers,
  errorRedirect,
  issueCode,
  loadPendingRequest,
  markAuthenticated,
  type PendingRequest,
  rememberConsent,
  savePendingRequest,
} from '../oauth/authorize.ts';
import { findClient, type OAuthClient, type OAuthDeps } from '../oauth/clients.ts';
import { accessDenied, consentRequired, loginRequired, OAuthError, param } from '../oauth/errors.ts';
import { consentPage, errorPage, loginPage } from '../oauth/pages.ts';
import type { User } from '../schema.ts';
import { userForSession } from '../sessions.ts';

/**
 * The browser side of the authorization code flow: /oauth/authorize, the
 * login page and the consent page. Server-rendered, no script. The browser
 * session is a cookie holding a session token (HttpOnly, SameSite=Lax,
 * Secure and __Host- in production); every form carries a CSRF token that
 * must equal a cookie the page set, and a cross-origin Origin is refused.
 */
export async function oauthPages(app: App, deps: OAuthDeps): Promise<void> {
  await app.register(cookie);
  const secure = deps.oauth.secureCookies;
  const SESSION = secure ? '__Host-auth_session' : 'auth_session';
  const CSRF = secure ? '__Host-auth_csrf' : 'auth_csrf';
  const issuerOrigin = new URL(deps.issuer).origin;
  const loginUrl = (r: PendingRequest) => `${deps.issuer}/oauth/login?request=${encodeURIComponent(r.id)}`;
  const consentUrl = (r: PendingRequest) => `${deps.issuer}/oauth/consent?request=${encodeURIComponent(r.id)}`;
  const cookieOptions = { path: '/', httpOnly: true, sameSite: 'lax' as const, secure };

  async function sessionUser(request: FastifyRequest): Promise<User | null> {
    const token = request.cookies[SESSION];
    return token ? userForSession(deps, token) : null;
  }

  function csrfToken(request: FastifyRequest, reply: FastifyReply): string {
    const existing = request.cookies[CSRF];
    if (existing && /^csrf_[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
    const fresh = randomToken('csrf_');
    reply.setCookie(CSRF, fresh, cookieOptions);
    return fresh;
  }

  /** Refuses a form post that did not come from our own page. */
  function checkForm(request: FastifyRequest): void {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== issuerOrigin) {
      throw new HttpProblem(403, 'csrf_failed', 'The form was posted from another site.');
    }
    const cookieValue = request.cookies[CSRF];
    const field = param(request.body, 'csrf');
    if (!cookieValue || !field || !safeEqual(cookieValue, field)) {
      throw new HttpProblem(403, 'csrf_failed', 'The form expired or did not come from this site; reload the page.');
    }
  }

  /** The next step of a request: sign in, consent, or back to the application with a code (or an error). */
  async function nextStep(request: PendingRequest, user: User | null): Promise<string> {
    if (!user || (request.prompt === 'login' && !request.authenticated)) {
      if (request.prompt === 'none') return errorRedirect(deps, request.redirectUri, request.state, loginRequired('The user is not signed in.'));
      return loginUrl(request);
    }
    if (request.prompt !== 'consent' && (await consentCovers(deps, user.id, request))) {
      return issueCode(deps, user.id, request);
    }
    if (request.prompt === 'none') {
      return errorRedirect(deps, request.redirectUri, request.state, consentRequired('The user has not granted these scopes.'));
    }
    return consentUrl(request);
  }

  /** A pending request and its client, or an error page. */
  async function pending(reply: FastifyReply, id: string | undefined) {
    const pendingRequest = await loadPendingRequest(deps, id);
    let client: OAuthClient | null = null;
    try {
      client = pendingRequest ? await findClient(deps, pendingRequest.clientId) : null;
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
    }
    if (!pendingRequest || !client) {
      errorPage(reply, 400, 'This sign-in request has expired or is unknown.');
      return null;
    }
    return { pendingRequest, client };
  }

  async function withPageErrors(reply: FastifyReply, fn: () => Promise<FastifyReply>): Promise<FastifyReply> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof AuthorizePageError) return errorPage(reply, 400, err.message);
      if (err instanceof AuthorizeRedirectError) return reply.redirect(err.url, 303);
      if (err instanceof HttpProblem && err.code === 'csrf_failed') return errorPage(reply, 403, err.message);
      throw err;
    }
  }

  const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');

  app.get('/oauth/authorize', { schema: { hide: true } }, async (request, reply) => {
    noStore(reply);
    const limit = await deps.authorizeLimiter.consume(request.ip);
    if (!limit.allowed) {
      deps.metrics.rateLimited.inc({ bucket: 'oauth_authorize' });
      reply.header('retry-after', String(Math.max(1, Math.ceil(limit.retryAfterMs / 1000))));
      return errorPage(reply, 429, 'Too many sign-in requests from this address; wait a moment and try again.');
    }
    try {
      const { request: pendingRequest } = await checkAuthorizationRequest(deps, request.query);
      await savePendingRequest(deps, pendingRequest);
      return reply.redirect(await nextStep(pendingRequest, await sessionUser(request)), 302);
    } catch (err) {
      if (err instanceof AuthorizePageError) return errorPage(reply, 400, err.message);
      if (err instanceof AuthorizeRedirectError) return reply.redirect(err.url, 302);
      throw err;
    }
  });

  app.get('/oauth/login', { schema: { hide: true } }, async (request, reply) => {
    noStore(reply);
    const found = await pending(reply, param(request.query, 'request'));
    if (!found) return reply;
    const csrf = csrfToken(request, reply);
    return loginPage(reply, { status: 200, action: `${deps.issuer}/oauth/login`, client: found.client, request: found.pendingRequest, csrf });
  });

  app.post('/oauth/login', { schema: { hide: true } }, async (request, reply) =>
    withPageErrors(reply, async () => {
      noStore(reply);
      checkForm(request);
      const found = await pending(reply, param(request.body, 'request'));
      if (!found) return reply;
      const email = param(request.body, 'email') ?? '';
      const password = param(request.body, 'password') ?? '';
      const show = (status: number, error: string) =>
        loginPage(reply, {
          status,
          action: `${deps.issuer}/oauth/login`,
          client: found.client,
          request: found.pendingRequest,
          csrf: request.cookies[CSRF] ?? '',
          email,
          error,
        });
      let result: Awaited<ReturnType<typeof login>>;
      try {
        // The page's own lockout: the same answer for every address, known or not (login.ts).
        result = await login(deps, { email, password, ip: request.ip, userAgent: request.headers['user-agent'] }, { surface: 'page' });
      } catch (err) {
        if (!(err instanceof HttpProblem) || err.status >= 500) throw err;
        reply.headers(err.headers);
        return show(err.status, err.message);
      }
      reply.setCookie(SESSION, result.sessionToken, { ...cookieOptions, expires: new Date(result.expiresAt) });
      await markAuthenticated(deps, found.pendingRequest);
      return reply.redirect(await nextStep(found.pendingRequest, result.user), 303);
    }),
  );

  app.get('/oauth/consent', { schema: { hide: true } }, async (request, reply) => {
    noStore(reply);
    const found = await pending(reply, param(request.query, 'request'));
    if (!found) return reply;
    const user = await sessionUser(request);
    if (!user) return reply.redirect(loginUrl(found.pendingRequest), 303);
    const csrf = csrfToken(request, reply);
    return consentPage(reply, {
      action: `${deps.issuer}/oauth/consent`,
      client: found.client,
      request: found.pendingRequest,
      csrf,
      email: user.email,
    });
  });

  app.post('/oauth/consent', { schema: { hide: true } }, async (request, reply) =>
    withPageErrors(reply, async () => {
      noStore(reply);
      checkForm(request);
      const found = await pending(reply, param(request.body, 'request'));
      if (!found) return reply;
      const { pendingRequest } = found;
      const user = await sessionUser(request);
      if (!user) return reply.redirect(loginUrl(pendingRequest), 303);
      if (param(request.body, 'decision') !== 'approve') {
        await deps.db.deleteFrom('oauth_requests').where('id', '=', pendingRequest.id).execute();
        const denied = accessDenied('The user denied the request.');
        return reply.redirect(errorRedirect(deps, pendingRequest.redirectUri, pendingRequest.state, denied), 303);
      }
      await rememberConsent(deps, user.id, pendingRequest);
      return reply.redirect(await issueCode(deps, user.id, pendingRequest), 303);
    }),
  );
}
