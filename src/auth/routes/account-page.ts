import cookie from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import { type App, usePageErrors } from '../../platform/http.ts';
import { accountPage, isNotice } from '../account-page-html.ts';
import { BrowserSession, CsrfError } from '../oauth/browser-session.ts';
import type { OAuthDeps } from '../oauth/clients.ts';
import { invalidRequest, OAuthError, param } from '../oauth/errors.ts';
import { errorPage, signedOutPage } from '../oauth/pages.ts';
import { listUserGrants, revokeUserGrant } from '../oauth/user-grants.ts';
import { endUserSession, listUserSessions } from '../sessions.ts';

/** Longest session id and client_id a form may name (session ids are UUIDs; the API bounds client_id alike). */
const SESSION_ID_MAX = 64;
const CLIENT_ID_MAX = 2048;

/**
 * The account page (OAUTH_PUBLIC_ENDPOINTS=true only): the signed-in user's
 * devices and the applications that can act for them, each with a button to
 * end it. The browser session, CSRF token, headers and error pages are the
 * sign-in page's (BrowserSession, sendPage); without a session the browser
 * goes to the sign-in page, which returns here (return_to, a closed list).
 */
export async function accountPageRoutes(app: App, deps: OAuthDeps): Promise<void> {
  await app.register(cookie);
  usePageErrors(app, (reply, status, message) => errorPage(reply, status, message));
  const session = new BrowserSession(deps);
  const accountUrl = `${deps.issuer}/account`;
  const signInUrl = `${deps.issuer}/oauth/login?return_to=${encodeURIComponent('/account')}`;

  /** Never cached; a refused form (CSRF) or a malformed one is an error page. */
  async function page(reply: FastifyReply, handle: () => Promise<FastifyReply>): Promise<FastifyReply> {
    reply.header('cache-control', 'no-store');
    try {
      return await handle();
    } catch (err) {
      if (err instanceof CsrfError) return errorPage(reply, 403, err.message);
      if (err instanceof OAuthError) return errorPage(reply, 400, err.message);
      throw err;
    }
  }

  /** A form field that must be present, within its bound and free of control characters (PostgreSQL text cannot hold NUL). */
  function field(body: unknown, name: string, max: number): string {
    const value = param(body, name);
    if (value === undefined || value.length > max || /\p{Cc}/u.test(value)) {
      throw invalidRequest(`The form's ${name} is missing, too long or not valid.`);
    }
    return value;
  }

  app.get('/account', { schema: { hide: true } }, async (request, reply) =>
    page(reply, async () => {
      const live = await session.live(request);
      if (!live) return reply.redirect(signInUrl, 303);
      const csrf = session.csrfToken(request, reply);
      const done = param(request.query, 'done');
      return accountPage(reply, {
        email: live.user.email,
        sessions: await listUserSessions(deps, live.user.id, live.id),
        grants: await listUserGrants(deps, live.user.id),
        csrf,
        signOutAction: `${accountUrl}/sessions/sign-out`,
        revokeAction: `${accountUrl}/grants/revoke`,
        notice: isNotice(done) ? done : null,
      });
    }),
  );

  app.post('/account/sessions/sign-out', { schema: { hide: true } }, async (request, reply) =>
    page(reply, async () => {
      session.checkForm(request);
      const live = await session.live(request);
      if (!live) return reply.redirect(signInUrl, 303);
      const id = field(request.body, 'session', SESSION_ID_MAX);
      if (id === live.id) {
        // This browser's own session: revoked, and the cookie cleared, as "Sign out" does.
        await session.signOut(request, reply);
        return signedOutPage(reply);
      }
      await endUserSession(deps, live.user.id, id);
      return reply.redirect(`${accountUrl}?done=session`, 303);
    }),
  );

  app.post('/account/grants/revoke', { schema: { hide: true } }, async (request, reply) =>
    page(reply, async () => {
      session.checkForm(request);
      const live = await session.live(request);
      if (!live) return reply.redirect(signInUrl, 303);
      await revokeUserGrant(deps, live.user.id, field(request.body, 'client_id', CLIENT_ID_MAX));
      return reply.redirect(`${accountUrl}?done=grant`, 303);
    }),
  );
}
