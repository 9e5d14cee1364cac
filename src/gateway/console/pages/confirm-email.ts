import { Type } from 'typebox';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { confirmAddress, describeConfirmation } from '../../control-plane/address-confirmation.ts';
import type { ConsoleContext } from '../console.ts';
import { preSessionBinding } from '../console-session.ts';
import { attempt, csrfField } from '../forms.ts';
import { renderPage, sendConsolePage } from '../layout.ts';

const Query = Type.Object({ token: Type.Optional(Type.String({ maxLength: 256 })) });
const Form = Type.Object({ csrf: Type.Optional(Type.String({ maxLength: 128 })), token: Type.Optional(Type.String({ maxLength: 256 })) });

/**
 * The page a confirmation email's link opens (address-confirmation.ts), in
 * the sign-in scope (its POST is CSRF-checked against the pre-session
 * cookie). The GET names the workspace and confirms nothing (mail scanners
 * prefetch links, and an owner who did not create the workspace must be
 * able to read what the button would do and leave); the POST confirms. It
 * signs no one in.
 */
export async function confirmEmailPages(app: App, ctx: ConsoleContext): Promise<void> {
  const { deps, assets, cookies, csrf } = ctx;
  const page = (title: string, body: string) => renderPage({ assets, title }, body);

  app.get('/auth/confirm-email', { schema: { hide: true, querystring: Query } }, async (request, reply) => {
    const token = request.query.token ?? '';
    const workspace = await describeConfirmation(deps, token);
    if (!workspace) {
      return sendConsolePage(
        reply,
        400,
        page('Link not valid', '<h1>This link cannot be used</h1><p class="form-error" role="alert">The confirmation link is not valid, or its workspace no longer holds the address.</p><p><a href="/sign-in">Sign in</a></p>'),
      );
    }
    const form = csrf.tokenFor(preSessionBinding(cookies, request, reply));
    const created = new Date(workspace.createdAt).toISOString().slice(0, 10);
    return sendConsolePage(
      reply,
      200,
      page(
        'Confirm your address',
        `<h1>Confirm your address</h1>
         <p>The workspace <strong>${escapeHtml(workspace.name)}</strong>, created on ${escapeHtml(created)}, was made with the address <strong>${escapeHtml(workspace.email)}</strong>.</p>
         <p>If you created it, confirm that this address is yours: from then on, signing in with it opens this workspace.</p>
         <p><strong>If you did not create it, do not confirm:</strong> close this page. Confirming would give your address to whoever created it; signing in with your address gives you a workspace of your own.</p>
         <form method="post" action="/auth/confirm-email" class="stack">
           ${csrfField(form)}
           <input type="hidden" name="token" value="${escapeHtml(token)}">
           <button type="submit">I created this workspace: confirm</button>
         </form>`,
      ),
    );
  });

  app.post('/auth/confirm-email', { schema: { hide: true, body: Form } }, async (request, reply) => {
    const confirmed = await attempt(() => confirmAddress(deps, { token: request.body.token ?? '', ip: request.ip }));
    if (!confirmed.ok) {
      const message = Object.values(confirmed.errors)[0] ?? 'This link cannot be used.';
      return sendConsolePage(
        reply,
        confirmed.status,
        page('Link not valid', `<h1>This link cannot be used</h1><p class="form-error" role="alert">${escapeHtml(message)}</p><p><a href="/sign-in">Sign in</a></p>`),
      );
    }
    return sendConsolePage(
      reply,
      200,
      page(
        'Address confirmed',
        `<h1>Address confirmed</h1>
         <p role="status">The address <strong>${escapeHtml(confirmed.value.email)}</strong> is confirmed for the workspace <strong>${escapeHtml(confirmed.value.name)}</strong>.</p>
         <p><a href="/sign-in">Sign in</a></p>`,
      ),
    );
  });
}
