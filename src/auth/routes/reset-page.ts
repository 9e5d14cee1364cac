import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { HttpProblem } from '../../platform/errors.ts';
import { acceptFormBodies } from '../../platform/form.ts';
import { escapeHtml, sendPage } from '../../platform/html.ts';
import { type App, usePageErrors } from '../../platform/http.ts';
import type { AuthDeps } from '../deps.ts';
import { resetPassword } from '../password-reset.ts';
import { PASSWORD_MAX, PASSWORD_MIN } from '../passwords.ts';

/** Token (<= 256) plus two passwords of <= 256 code points, percent-encoded (<= 12 bytes each): about 6.5 KB. */
const BODY_LIMIT = 8 * 1024;
const TOKEN_MAX = 256;
/** Characters, not code points: a code point is at most 2 UTF-16 units, so this admits every valid password. */
const FIELD_MAX = 2 * PASSWORD_MAX;

/**
 * The page a reset link opens when AUTH_RESET_URL is unset. A browser reaches
 * it from an email, so it carries no API key; the token is the credential.
 * GET only shows the form (mail scanners prefetch links, and a GET must not
 * consume the token); the POST sets the password. It is public, so the body
 * is bounded (8 KB, each field bounded, one value per field), bcrypt runs only
 * for a live token (a token works once, so once per emailed link), and every
 * interpolated string is escaped; errors are pages, never JSON or stack traces.
 */
export async function resetPageRoutes(app: App, deps: AuthDeps): Promise<void> {
  acceptFormBodies(app);
  usePageErrors(app, (reply, status, message) => {
    const text = status >= 500 ? message : 'The request could not be read; open the link again.';
    return sendPage(reply, status, 'Reset password', `<h1>Reset your password</h1><p class="error">${escapeHtml(text)}</p>`);
  });

  app.get(
    '/reset-password',
    { schema: { hide: true, querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: TOKEN_MAX })) }) } },
    async (request, reply) => form(reply, 200, request.query.token ?? ''),
  );

  app.post('/reset-password', { bodyLimit: BODY_LIMIT, schema: { hide: true } }, async (request, reply) => {
    const token = field(request.body, 'token', TOKEN_MAX);
    const password = field(request.body, 'password', FIELD_MAX);
    const confirm = field(request.body, 'confirm', FIELD_MAX);
    if (token === undefined || password === undefined || confirm === undefined) {
      return form(reply, 400, token ?? '', 'The form was incomplete; type the new password twice.');
    }
    if (password !== confirm) return form(reply, 400, token, 'The two passwords differ; type the same password twice.');
    try {
      const user = await resetPassword(deps, { token, password });
      return sendPage(
        reply,
        200,
        'Password changed',
        `<h1>Password changed</h1><p>The password for ${escapeHtml(user.email)} is changed and every device was signed out. ` +
          'You can close this page and sign in with the new password.</p>',
      );
    } catch (err) {
      if (!(err instanceof HttpProblem)) throw err;
      // A refused password leaves the link usable: show the form again.
      if (err.code === 'password_too_short' || err.code === 'password_too_long') return form(reply, 400, token, err.message);
      return sendPage(reply, err.status, 'Link not valid', `<h1>This link cannot be used</h1><p class="error">${escapeHtml(err.message)}</p>`);
    }
  });
}

/** One string value of a form field, or undefined when missing, repeated or too long. */
function field(body: unknown, name: string, max: number): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' && value.length <= max ? value : undefined;
}

function form(reply: FastifyReply, status: number, token: string, error?: string): FastifyReply {
  const input = (name: string, label: string) =>
    `<label for="${name}">${label}</label>` +
    `<input type="password" id="${name}" name="${name}" autocomplete="new-password" required ` +
    `minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}">`;
  return sendPage(
    reply,
    status,
    'Reset password',
    `<h1>Choose a new password</h1>
     ${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
     <form method="post" action="/reset-password">
       <input type="hidden" name="token" value="${escapeHtml(token)}">
       ${input('password', 'New password')}
       ${input('confirm', 'New password again')}
       <p class="muted">${PASSWORD_MIN} to ${PASSWORD_MAX} characters. Every device signed in to your account will be signed out.</p>
       <div class="actions"><button type="submit">Set the new password</button></div>
     </form>`,
  );
}
