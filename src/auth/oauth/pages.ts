import type { FastifyReply } from 'fastify';
import { escapeHtml, sendPage } from '../../platform/html.ts';
import { SCOPES } from '../scopes.ts';
import type { PendingRequest } from './authorize.ts';
import type { OAuthClient } from './clients.ts';
import { type ReturnPath, returnPurpose } from './return-paths.ts';

/** Origin (or private-use scheme) of a redirect URI, for the pages' CSP form-action. */
export function formActionSource(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

function clientLine(client: OAuthClient): string {
  const via = client.metadataHost && client.metadataHost !== client.host ? ` (identified by ${escapeHtml(client.metadataHost)})` : '';
  return `<strong>${escapeHtml(client.name)}</strong> <span class="muted">at ${escapeHtml(client.host)}${via}</span>`;
}

export function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
}

/** What a sign-in is for: a pending authorization request, or one of the service's own pages to return to. */
export type SignInTarget =
  | { kind: 'authorize'; client: OAuthClient; request: PendingRequest }
  | { kind: 'return'; path: ReturnPath };

export function loginPage(
  reply: FastifyReply,
  args: { status: number; action: string; target: SignInTarget; csrf: string; email?: string; error?: string },
): FastifyReply {
  const error = args.error ? `<p class="error" role="alert">${escapeHtml(args.error)}</p>` : '';
  const { target } = args;
  const purpose = target.kind === 'authorize' ? `to continue to ${clientLine(target.client)}` : escapeHtml(returnPurpose(target.path));
  const returnField = target.kind === 'authorize' ? hidden('request', target.request.id) : hidden('return_to', target.path);
  return sendPage(
    reply,
    args.status,
    'Sign in',
    `<h1>Sign in</h1>
     <p>${purpose}</p>
     ${error}
     <form method="post" action="${escapeHtml(args.action)}">
       ${returnField}${hidden('csrf', args.csrf)}
       <label for="email">Email</label>
       <input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(args.email ?? '')}">
       <label for="password">Password</label>
       <input id="password" name="password" type="password" autocomplete="current-password" required>
       <div class="actions"><button type="submit">Sign in</button></div>
     </form>`,
    { formAction: target.kind === 'authorize' ? [formActionSource(target.request.redirectUri)] : [] },
  );
}

export function consentPage(
  reply: FastifyReply,
  args: { action: string; signOutAction: string; client: OAuthClient; request: PendingRequest; csrf: string; email: string },
): FastifyReply {
  const scopes = args.request.scope
    .map((s) => `<li>${escapeHtml(SCOPES[s] ?? s)} <span class="muted">(${escapeHtml(s)})</span></li>`)
    .join('');
  const resource = args.request.resource
    ? `<p class="muted">For use with ${escapeHtml(new URL(args.request.resource).host)}.</p>`
    : '';
  return sendPage(
    reply,
    200,
    'Allow access?',
    `<h1>Allow access?</h1>
     <p>${clientLine(args.client)} wants to:</p>
     <ul class="scopes">${scopes}</ul>
     ${resource}
     <p class="muted">Signed in as ${escapeHtml(args.email)}. You will be sent back to ${escapeHtml(formActionSource(args.request.redirectUri))}.</p>
     <form method="post" action="${escapeHtml(args.action)}">
       ${hidden('request', args.request.id)}${hidden('csrf', args.csrf)}
       <div class="actions">
         <button type="submit" name="decision" value="approve">Allow</button>
         <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
       </div>
     </form>
     <form method="post" action="${escapeHtml(args.signOutAction)}" class="switch">
       ${hidden('request', args.request.id)}${hidden('csrf', args.csrf)}
       <p class="muted">Not ${escapeHtml(args.email)}? <button type="submit" class="link">Sign out</button></p>
     </form>`,
    { formAction: [formActionSource(args.request.redirectUri)] },
  );
}

export function errorPage(reply: FastifyReply, status: number, message: string): FastifyReply {
  return sendPage(
    reply,
    status,
    'Cannot continue',
    `<h1>This request cannot continue</h1><p class="error" role="alert">${escapeHtml(message)}</p>
     <p class="muted">Go back to the application and try again.</p>`,
  );
}

/** Asks before signing out: a GET (a link, a prefetch) must not end anyone's session. */
export function signOutPage(reply: FastifyReply, args: { action: string; csrf: string; email: string }): FastifyReply {
  return sendPage(
    reply,
    200,
    'Sign out?',
    `<h1>Sign out?</h1>
     <p>You are signed in as ${escapeHtml(args.email)}.</p>
     <form method="post" action="${escapeHtml(args.action)}">
       ${hidden('csrf', args.csrf)}
       <div class="actions"><button type="submit">Sign out</button></div>
     </form>`,
  );
}

export function signedOutPage(reply: FastifyReply): FastifyReply {
  return sendPage(reply, 200, 'Signed out', '<h1>You are signed out</h1><p class="muted">You can close this page.</p>');
}
