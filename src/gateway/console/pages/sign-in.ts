import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { requestMagicLink, verifyMagicLink } from '../../control-plane/magic-links.ts';
import type { ConsoleContext } from '../console.ts';
import { endConsoleSession, postedPreSession, preSessionBinding, readConsoleSession, setConsoleSession } from '../console-session.ts';
import { attempt, csrfField, field, formError } from '../forms.ts';
import { confirmEmailPages } from './confirm-email.ts';
import { renderPage, sendConsolePage } from '../layout.ts';

/**
 * Another way to sign in, drawn as a button under the magic-link form: it
 * posts (with the page's CSRF token) to `action`, a gateway route that
 * establishes who the person is, then calls startConsoleSession
 * (console-session.ts) and redirects to `/`.
 */
export interface SignInButton {
  label: string;
  action: string;
  /** Origins `action` answers with a redirect to (the sign-in page's form-action must allow them, layout.ts consoleCsp). */
  redirectsTo?: readonly string[];
}

/** Routes of another sign-in method, registered in the sign-in scope: their POSTs get the same CSRF check. */
export type SignInRoutes = (app: App, ctx: ConsoleContext) => Promise<void>;

const Form = Type.Object({
  csrf: Type.Optional(Type.String({ maxLength: 128 })),
  email: Type.Optional(Type.String({ maxLength: 1024 })),
});
const LinkForm = Type.Object({
  csrf: Type.Optional(Type.String({ maxLength: 128 })),
  token: Type.Optional(Type.String({ maxLength: 256 })),
  open: Type.Optional(Type.Union([Type.Literal('console'), Type.Literal('token')])),
});
const Notice = Type.Object({ signed_out: Type.Optional(Type.String({ maxLength: 8 })) });

/**
 * Signing in: `GET/POST /sign-in` (ask for a link by email) and, unless
 * GATEWAY_MAGIC_LINK_URL sends the emails' links elsewhere, the page those
 * links open, `GET/POST /auth/magic-link`. The GET never uses a link up
 * (mail scanners prefetch links); its POST signs the browser in to the
 * console, or, with the second button, shows a session token for the API
 * once instead. Every POST here is CSRF-checked against the pre-session
 * cookie (login CSRF: no one can sign a browser in to their own workspace).
 */
export async function signInPages(app: App, ctx: ConsoleContext): Promise<void> {
  const { deps, assets, cookies, csrf } = ctx;
  const page = (title: string, body: string) => renderPage({ assets, title }, body);
  const minutes = Math.round(deps.config.magicLinkTtlMs / 60_000);
  // The pages that draw the buttons let their forms' redirects through (layout.ts consoleCsp).
  const buttonOrigins = [...new Set(ctx.signInButtons.flatMap((b) => b.redirectsTo ?? []))];
  // Every POST of this scope, ConsoleOptions.signInRoutes' included, after the body is parsed and before it is read.
  app.addHook('preValidation', async (request: FastifyRequest) => {
    if (request.method === 'POST') csrf.checkPost(request, postedPreSession(cookies, request), ctx.allowedOrigins);
  });

  function signInForm(token: string, email: string, errors: Record<string, string>): string {
    const others = ctx.signInButtons
      .map((b) => `<form method="post" action="${escapeHtml(b.action)}">${csrfField(token)}<button type="submit" class="secondary">${escapeHtml(b.label)}</button></form>`)
      .join('');
    return `<h1>Sign in to the AI gateway console</h1>
      <form method="post" action="/sign-in" class="stack" novalidate>
        ${csrfField(token)}
        ${formError(errors)}
        ${field({ id: 'email', name: 'email', label: 'Email address', type: 'email', value: email, required: true, autocomplete: 'email', maxlength: 320, hint: `The address your workspace was created with. We email you a link that signs you in once, within ${minutes} minutes.`, error: errors['email'] })}
        <button type="submit">Email me a sign-in link</button>
      </form>
      ${others ? `<div class="alternatives"><p class="muted">Or</p>${others}</div>` : ''}`;
  }

  app.get('/sign-in', { schema: { hide: true, querystring: Notice } }, async (request, reply) => {
    if (await readConsoleSession(deps, cookies, request)) return reply.redirect('/', 303);
    const token = csrf.tokenFor(preSessionBinding(cookies, request, reply));
    const notice = request.query.signed_out ? '<p class="notice" role="status">You are signed out.</p>' : '';
    return sendConsolePage(reply, 200, page('Sign in', notice + signInForm(token, '', {})), buttonOrigins);
  });

  app.post('/sign-in', { schema: { hide: true, body: Form } }, async (request, reply) => {
    const email = request.body.email ?? '';
    const asked = await attempt(() => requestMagicLink(deps, { email, ip: request.ip }));
    const token = csrf.tokenFor(preSessionBinding(cookies, request, reply));
    if (!asked.ok) return sendConsolePage(reply, 400, page('Sign in', signInForm(token, email, asked.errors)), buttonOrigins);
    // The same page whether or not the address has a workspace (magic-links.ts answers alike in body and time).
    return sendConsolePage(
      reply,
      200,
      page(
        'Check your email',
        `<h1>Check your email</h1>
         <p role="status">If a workspace belongs to <strong>${escapeHtml(email.trim())}</strong>, a sign-in link is on its way. It works once, within ${minutes} minutes.</p>
         <p><a href="/sign-in">Use another address</a></p>`,
      ),
    );
  });

  for (const routes of ctx.signInRoutes) await app.register(routes, ctx);
  await app.register(confirmEmailPages, ctx);
  if (deps.config.magicLinkUrl) return;

  app.get('/auth/magic-link', { schema: { hide: true, querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: 256 })) }) } }, async (request, reply) => {
    const token = csrf.tokenFor(preSessionBinding(cookies, request, reply));
    return sendConsolePage(
      reply,
      200,
      page(
        'Sign in',
        `<h1>Sign in to the AI gateway</h1>
         <p>This link signs you in once.</p>
         <form method="post" action="/auth/magic-link" class="stack">
           ${csrfField(token)}
           <input type="hidden" name="token" value="${escapeHtml(request.query.token ?? '')}">
           <button type="submit" name="open" value="console">Sign in to the console</button>
           <button type="submit" name="open" value="token" class="secondary">Show a session token for the API instead</button>
         </form>`,
      ),
    );
  });

  app.post('/auth/magic-link', { schema: { hide: true, body: LinkForm } }, async (request, reply) => {
    const verified = await attempt(() => verifyMagicLink(deps, { token: request.body.token ?? '', ip: request.ip }));
    if (!verified.ok) {
      const status = verified.status;
      const message = Object.values(verified.errors)[0] ?? 'This link cannot be used.';
      return sendConsolePage(
        reply,
        status,
        page('Link not valid', `<h1>This link cannot be used</h1><p class="form-error" role="alert">${escapeHtml(message)}</p><p><a href="/sign-in">Ask for a new link</a></p>`),
      );
    }
    const session = verified.value;
    // Without `open` (a script posting the bare token, as before the console): the token page.
    if (request.body.open !== 'console') {
      return sendConsolePage(
        reply,
        200,
        page(
          'Signed in',
          `<h1>Signed in</h1>
           <p>Your session token, shown once. Send it as <code>Authorization: Bearer</code> to <code>/api/v1/tenant/…</code>:</p>
           <p><code class="wrap">${escapeHtml(session.sessionToken)}</code></p>
           <p class="muted">Workspace ${escapeHtml(session.tenantId)}; the session lasts until ${escapeHtml(new Date(session.expiresAt).toUTCString())}.</p>`,
        ),
      );
    }
    await setConsoleSession(deps, request, reply, { token: session.sessionToken, expiresAt: session.expiresAt });
    return reply.redirect('/', 303);
  });
}

/** POST /sign-out (in the signed-in scope, so CSRF-checked): the session ends server-side, not only in this browser. */
export async function signOutRoute(app: App, ctx: ConsoleContext): Promise<void> {
  app.post('/sign-out', { schema: { hide: true } }, async (request, reply) => {
    await endConsoleSession(ctx.deps, ctx.cookies, request, reply);
    return reply.redirect('/sign-in?signed_out=1', 303);
  });
}
