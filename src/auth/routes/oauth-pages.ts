import cookie from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import { HttpProblem } from '../../platform/errors.ts';
import { type App, usePageErrors } from '../../platform/http.ts';
import { login } from '../login.ts';
import { AuthorizePageError, AuthorizeRedirectError, checkAuthorizationRequest, errorRedirect, type PendingRequest } from '../oauth/authorize.ts';
import { BrowserSession, CsrfError } from '../oauth/browser-session.ts';
import type { OAuthClient, OAuthDeps } from '../oauth/clients.ts';
import { rememberConsent } from '../oauth/consents.ts';
import { accessDenied, OAuthError, param } from '../oauth/errors.ts';
import { nextStep } from '../oauth/next-step.ts';
import { consentPage, errorPage, loginPage, type SignInTarget, signedOutPage, signOutPage } from '../oauth/pages.ts';
import { discardPendingRequest, issueCode, markAuthenticated, savePendingRequest } from '../oauth/pending-requests.ts';
import { findSignInTarget, pendingWithClient, targetQuery } from '../oauth/sign-in-target.ts';
import type { User } from '../schema.ts';

/**
 * The browser side of the authorization code flow: /oauth/authorize, the
 * sign-in and consent pages, and sign-out. Server-rendered, no script. The
 * decisions live in src/auth/oauth (checkAuthorizationRequest, nextStep,
 * BrowserSession); each handler here parses, calls and renders.
 */
export async function oauthPages(app: App, deps: OAuthDeps): Promise<void> {
  await app.register(cookie);
  // People read these answers, not programs: errors the framework raises before a handler runs
  // (a body over the size or field limit, a wrong content type) are pages too, in this scope only.
  // Our own problems (the X-Api-Key hook of the edge deployment) keep their documented problem+json.
  usePageErrors(app, (reply, status, message) => errorPage(reply, status, message), { keepApiProblems: true });
  const session = new BrowserSession(deps);
  const pageUrl = (path: string, r: PendingRequest) => `${deps.issuer}${path}?request=${encodeURIComponent(r.id)}`;

  /** Where the browser goes next: the sign-in page, the consent page, or back to the client. */
  async function advance(client: OAuthClient, request: PendingRequest, user: User | null): Promise<string> {
    const step = await nextStep(deps, client, request, user);
    if (step.kind === 'login') return pageUrl('/oauth/login', request);
    if (step.kind === 'consent') return pageUrl('/oauth/consent', request);
    return step.url;
  }

  const pending = (id: string | undefined) => pendingWithClient(deps, id);

  /** Renders the flow's refusals as pages or redirects; anything else goes to the scope's error handler. */
  async function page(reply: FastifyReply, status: 302 | 303, handle: () => Promise<FastifyReply>): Promise<FastifyReply> {
    reply.header('cache-control', 'no-store');
    try {
      return await handle();
    } catch (err) {
      if (err instanceof AuthorizeRedirectError) return reply.redirect(err.url, status);
      if (err instanceof AuthorizePageError) return errorPage(reply.headers(err.headers), err.status, err.message);
      if (err instanceof OAuthError) return errorPage(reply, 400, err.message);
      if (err instanceof CsrfError) return errorPage(reply, 403, err.message);
      throw err;
    }
  }
  const expired = (reply: FastifyReply) => errorPage(reply, 400, 'This sign-in request has expired or is unknown.');

  app.get('/oauth/authorize', { schema: { hide: true } }, async (request, reply) =>
    page(reply, 302, async () => {
      const limit = await deps.authorizeLimiter.consume(request.ip);
      if (!limit.allowed) {
        deps.metrics.rateLimited.inc({ bucket: 'oauth_authorize' });
        reply.header('retry-after', String(Math.max(1, Math.ceil(limit.retryAfterMs / 1000))));
        return errorPage(reply, 429, 'Too many sign-in requests from this address; wait a moment and try again.');
      }
      const user = await session.user(request);
      const { client, request: pendingRequest } = await checkAuthorizationRequest(deps, request.query, { signedIn: user !== null });
      await savePendingRequest(deps, pendingRequest);
      return reply.redirect(await advance(client, pendingRequest, user), 302);
    }),
  );

  const signInTarget = (source: unknown) => findSignInTarget(deps, source);
  /** "Create an account" on the sign-in page, for the same target: only where the sign-up page is served. */
  const signUpUrl = (target: SignInTarget) =>
    deps.oauth.publicEndpoints ? `${deps.issuer}/oauth/signup?${targetQuery(target)}` : undefined;

  app.get('/oauth/login', { schema: { hide: true } }, async (request, reply) =>
    page(reply, 303, async () => {
      const target = await signInTarget(request.query);
      if (!target) return expired(reply);
      const csrf = session.csrfToken(request, reply);
      return loginPage(reply, { status: 200, action: `${deps.issuer}/oauth/login`, target, csrf, signUpUrl: signUpUrl(target) });
    }),
  );

  app.post('/oauth/login', { schema: { hide: true } }, async (request, reply) =>
    page(reply, 303, async () => {
      session.checkForm(request);
      const target = await signInTarget(request.body);
      if (!target) return expired(reply);
      const email = param(request.body, 'email') ?? '';
      const password = param(request.body, 'password') ?? '';
      let result: Awaited<ReturnType<typeof login>>;
      try {
        // The page's own lockout: the same answer for every address, known or not (login.ts).
        result = await login(deps, { email, password, ip: request.ip, userAgent: request.headers['user-agent'] }, { surface: 'page' });
      } catch (err) {
        if (!(err instanceof HttpProblem) || err.status >= 500) throw err;
        reply.headers(err.headers);
        const csrf = session.postedCsrf(request);
        return loginPage(reply, {
          status: err.status,
          action: `${deps.issuer}/oauth/login`,
          target,
          csrf,
          email,
          error: err.message,
          signUpUrl: signUpUrl(target),
        });
      }
      session.signIn(reply, result.sessionToken, result.expiresAt);
      if (target.kind === 'return') return reply.redirect(`${deps.issuer}${target.path}`, 303);
      await markAuthenticated(deps, target.request);
      return reply.redirect(await advance(target.client, target.request, result.user), 303);
    }),
  );

  app.get('/oauth/consent', { schema: { hide: true } }, async (request, reply) =>
    page(reply, 303, async () => {
      const found = await pending(param(request.query, 'request'));
      if (!found) return expired(reply);
      const user = await session.user(request);
      if (!user) return reply.redirect(pageUrl('/oauth/login', found.request), 303);
      const csrf = session.csrfToken(request, reply);
      return consentPage(reply, {
        action: `${deps.issuer}/oauth/consent`,
        signOutAction: `${deps.issuer}/oauth/logout`,
        client: found.client,
        request: found.request,
        csrf,
        email: user.email,
      });
    }),
  );

  app.post('/oauth/consent', { schema: { hide: true } }, async (request, reply) =>
    page(reply, 303, async () => {
      session.checkForm(request);
      const found = await pending(param(request.body, 'request'));
      if (!found) return expired(reply);
      const user = await session.user(request);
      if (!user) return reply.redirect(pageUrl('/oauth/login', found.request), 303);
      if (param(request.body, 'decision') !== 'approve') {
        await discardPendingRequest(deps, found.request);
        const denied = accessDenied('The user denied the request.');
        return reply.redirect(errorRedirect(deps, found.request.redirectUri, found.request.state, denied), 303);
      }
      await rememberConsent(deps, user.id, found.request, found.client);
      return reply.redirect(await issueCode(deps, user.id, found.request), 303);
    }),
  );

  /** Sign-out: GET asks (a link or a prefetch must not sign anyone out), POST signs out. */
  app.get('/oauth/logout', { schema: { hide: true } }, async (request, reply) =>
    page(reply, 303, async () => {
      const user = await session.user(request);
      if (!user) return signedOutPage(reply);
      const csrf = session.csrfToken(request, reply);
      return signOutPage(reply, { action: `${deps.issuer}/oauth/logout`, csrf, email: user.email });
    }),
  );

  app.post('/oauth/logout', { schema: { hide: true } }, async (request, reply) =>
    page(reply, 303, async () => {
      session.checkForm(request);
      await session.signOut(request, reply);
      // "Not you?" on the consent page: back to sign-in for the same request.
      const found = await pending(param(request.body, 'request'));
      if (found) return reply.redirect(pageUrl('/oauth/login', found.request), 303);
      return signedOutPage(reply);
    }),
  );
}
