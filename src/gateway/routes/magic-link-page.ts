
import { Type } from 'typebox';
import { HttpProblem } from '../../platform/errors.ts';
import { acceptFormBodies } from '../../platform/form.ts';
import { escapeHtml, sendPage } from '../../platform/html.ts';
import { type App, usePageErrors } from '../../platform/http.ts';
import type { GatewayDeps } from '../deps.ts';
import { verifyMagicLink } from '../magic-links.ts';

/**
 * The page a sign-in link opens when GATEWAY_MAGIC_LINK_URL is unset. GET
 * only shows a button (mail scanners prefetch links, and a GET must not use
 * up the link); the POST signs in and shows the session token once, with
 * the headers of every server-rendered page (CSP, no framing, no-store).
 */
export async function magicLinkPageRoutes(app: App, deps: GatewayDeps): Promise<void> {
  acceptFormBodies(app);
  // A browser page answers a malformed request with a page, not JSON.
  usePageErrors(app, (reply, status, message) =>
    sendPage(reply, status, 'Request not valid', `<h1>This request cannot be used</h1><p class="error">${escapeHtml(message)}</p>`),
  );

  const Token = Type.Object({ token: Type.Optional(Type.String({ maxLength: 256 })) });

  app.get('/auth/magic-link', { schema: { hide: true, querystring: Token } }, async (request, reply) => {
    return sendPage(
      reply,
      200,
      'Sign in',
      `<h1>Sign in to the AI gateway</h1>
       <form method="post" action="/auth/magic-link">
         <input type="hidden" name="token" value="${escapeHtml(request.query.token ?? '')}">
         <button type="submit">Sign in</button>
       </form>`,
    );
  });

  app.post('/auth/magic-link', { schema: { hide: true, body: Token } }, async (request, reply) => {
    try {
      const result = await verifyMagicLink(deps, { token: request.body.token ?? '', ip: request.ip });
      return sendPage(
        reply,
        200,
        'Signed in',
        `<h1>Signed in</h1>
         <p>Your session token (shown once; send it as <code>Authorization: Bearer</code> to /api/v1/tenant/…):</p>
         <p><code>${escapeHtml(result.sessionToken)}</code></p>
         <p class="muted">Workspace ${escapeHtml(result.tenantId)}; the session lasts until ${escapeHtml(new Date(result.expiresAt).toUTCString())}.</p>`,
      );
    } catch (err) {
      if (!(err instanceof HttpProblem)) throw err;
      return sendPage(reply, err.status, 'Link not valid', `<h1>This link cannot be used</h1><p class="error">${escapeHtml(err.message)}</p>`);
    }
  });
}
