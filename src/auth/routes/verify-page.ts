
import cookie from '@fastify/cookie';
import { Type } from 'typebox';
import { HttpProblem } from '../../platform/errors.ts';
import { acceptFormBodies } from '../../platform/form.ts';
import { escapeHtml, sendPage } from '../../platform/html.ts';
import { type App, usePageErrors } from '../../platform/http.ts';
import { verifyEmail } from '../accounts.ts';
import type { AuthDeps } from '../deps.ts';
import { SignupContinuation } from '../oauth/signup-continuation.ts';

/**
 * The page a verification link opens when AUTH_VERIFY_URL is unset. It is
 * reached by a browser from an email, so it carries no API key; the token
 * itself is the credential. GET only shows a button (mail scanners prefetch
 * links, and a GET must not consume the token); the POST verifies. In the
 * browser that signed up on the sign-up page, it then offers "Continue" to
 * where the sign-up was going (/oauth/signup/continue); it never signs in.
 */
export async function verifyPageRoutes(app: App, deps: AuthDeps): Promise<void> {
  await app.register(cookie);
  acceptFormBodies(app);
  // A browser page answers a malformed request (too many form fields, an oversized token) with a page, not JSON.
  usePageErrors(app, (reply, status, message) =>
    sendPage(reply, status, 'Request not valid', `<h1>This request cannot be used</h1><p class="error">${escapeHtml(message)}</p>`),
  );

  const Token = Type.Object({ token: Type.Optional(Type.String({ maxLength: 256 })) });
  // A sign-up on the public sign-up page left, in this browser, where it was going (signup-page.ts).
  const oauth = deps.config.oauth;
  const continuation = oauth?.publicEndpoints
    ? new SignupContinuation({ secureCookies: oauth.secureCookies, maxAgeMs: deps.config.verificationTtlMs })
    : null;

  app.get('/verify', { schema: { hide: true, querystring: Token } }, async (request, reply) => {
    const token = request.query.token ?? '';
    return sendPage(
      reply,
      200,
      'Confirm your email',
      `<h1>Confirm your email address</h1>
       <form method="post" action="/verify">
         <input type="hidden" name="token" value="${escapeHtml(token)}">
         <button type="submit">Confirm my email address</button>
       </form>`,
    );
  });

  app.post('/verify', { schema: { hide: true, body: Token } }, async (request, reply) => {
    try {
      const user = await verifyEmail(deps, request.body.token ?? '');
      const next = continuation?.read(request)
        ? `<p>Sign in with your new password to continue where you were going.</p>
           <form method="get" action="${escapeHtml(deps.config.baseUrl)}/oauth/signup/continue">
             <div class="actions"><button type="submit">Continue</button></div>
           </form>`
        : '<p>You can close this page and sign in.</p>';
      return sendPage(reply, 200, 'Email confirmed', `<h1>Email confirmed</h1><p>${escapeHtml(user.email)} is confirmed.</p>${next}`);
    } catch (err) {
      if (!(err instanceof HttpProblem)) throw err;
      return sendPage(reply, err.status, 'Link not valid', `<h1>This link cannot be used</h1><p class="error">${escapeHtml(err.message)}</p>`);
    }
  });
}
