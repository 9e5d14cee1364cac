import type { FastifyReply } from 'fastify';
import { escapeHtml, sendPage } from '../../platform/html.ts';
import { PASSWORD_MAX, PASSWORD_MIN } from '../passwords.ts';
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

/** What the sign-in or sign-up is for, in words ("to continue to <client> at <host>"). */
function targetPurpose(target: SignInTarget): string {
  return target.kind === 'authorize' ? `to continue to ${clientLine(target.client)}` : escapeHtml(returnPurpose(target.path));
}

/** The hidden field that carries the target through a form. */
function targetField(target: SignInTarget): string {
  return target.kind === 'authorize' ? hidden('request', target.request.id) : hidden('return_to', target.path);
}

export function loginPage(
  reply: FastifyReply,
  args: { status: number; action: string; target: SignInTarget; csrf: string; email?: string; error?: string; signUpUrl?: string },
): FastifyReply {
  const error = args.error ? `<p class="error" role="alert">${escapeHtml(args.error)}</p>` : '';
  const { target } = args;
  const purpose = targetPurpose(target);
  const returnField = targetField(target);
  const signUp = args.signUpUrl
    ? `<p>New here? <a href="${escapeHtml(args.signUpUrl)}">Create an account</a></p>`
    : '';
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
     </form>
     ${signUp}`,
    { formAction: target.kind === 'authorize' ? [formActionSource(target.request.redirectUri)] : [] },
  );
}

/** The sign-up form's fields, each of which may carry its own error. */
export type SignUpField = 'email' | 'password' | 'confirm';
export type SignUpErrors = Partial<Record<SignUpField, string>>;

/** Longest address the form's input takes (RFC 5321 section 4.5.3.1.3; normalizeEmail refuses longer ones). */
const EMAIL_INPUT_MAX = 254;

/**
 * One labelled input with its hint and error, tied to it by aria-describedby
 * so a screen reader reads them with the field; aria-invalid marks it.
 */
function signUpInput(args: { id: SignUpField; label: string; attrs: string; hint?: string; error?: string }): string {
  const described: string[] = [];
  const hint = args.hint ? `<p class="muted" id="${args.id}-hint">${escapeHtml(args.hint)}</p>` : '';
  if (args.hint) described.push(`${args.id}-hint`);
  const error = args.error
    ? `<p class="error" id="${args.id}-error"><span class="sr-only">Error: </span>${escapeHtml(args.error)}</p>`
    : '';
  if (args.error) described.push(`${args.id}-error`);
  const aria = `${args.error ? ' aria-invalid="true"' : ''}${described.length ? ` aria-describedby="${described.join(' ')}"` : ''}`;
  return `<label for="${args.id}">${escapeHtml(args.label)}</label>
       <input id="${args.id}" name="${args.id}" ${args.attrs}${aria} required>${error}${hint}`;
}

/**
 * The sign-up form (OAUTH_PUBLIC_ENDPOINTS only). Errors of a field are shown
 * next to it and listed, as links to the fields, in an alert at the top; an
 * error of the whole form (a rate limit) alone at the top.
 */
export function signUpPage(
  reply: FastifyReply,
  args: {
    status: number;
    action: string;
    target: SignInTarget;
    csrf: string;
    signInUrl: string;
    email?: string;
    errors?: SignUpErrors;
    error?: string;
  },
): FastifyReply {
  const errors = args.errors ?? {};
  const listed = (Object.entries(errors) as [SignUpField, string][])
    .map(([field, message]) => `<li><a href="#${field}">${escapeHtml(message)}</a></li>`)
    .join('');
  const alert = listed
    ? `<div class="error" role="alert"><p>The account was not created:</p><ul>${listed}</ul></div>`
    : args.error
      ? `<p class="error" role="alert">${escapeHtml(args.error)}</p>`
      : '';
  return sendPage(
    reply,
    args.status,
    'Create an account',
    `<h1>Create an account</h1>
     <p>${targetPurpose(args.target)}</p>
     ${alert}
     <form method="post" action="${escapeHtml(args.action)}">
       ${targetField(args.target)}${hidden('csrf', args.csrf)}
       ${signUpInput({
         id: 'email',
         label: 'Email',
         attrs: `type="email" autocomplete="email" maxlength="${EMAIL_INPUT_MAX}" value="${escapeHtml(args.email ?? '')}"`,
         hint: 'We will send a link to this address to confirm it.',
         error: errors.email,
       })}
       ${signUpInput({
         id: 'password',
         label: 'Password',
         attrs: `type="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}"`,
         hint: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`,
         error: errors.password,
       })}
       ${signUpInput({
         id: 'confirm',
         label: 'Password again',
         attrs: `type="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}"`,
         error: errors.confirm,
       })}
       <div class="actions"><button type="submit">Create the account</button></div>
     </form>
     <p>Already have an account? <a href="${escapeHtml(args.signInUrl)}">Sign in</a></p>`,
  );
}

/**
 * After the sign-up form: the same page whether the address was new or
 * already had an account (its email says which), so the page tells nobody
 * which addresses have accounts.
 */
export function checkEmailPage(
  reply: FastifyReply,
  args: { email: string; hours: number; continues: boolean; signUpUrl: string; signInUrl: string },
): FastifyReply {
  // With AUTH_VERIFY_URL the link opens the product's page, which knows nothing of where the sign-up was going.
  const open = args.continues ? 'Open the link in it, in this browser, to confirm your address and continue.' : 'Open the link in it to confirm your address.';
  return sendPage(
    reply,
    200,
    'Check your email',
    `<h1>Check your email</h1>
     <p>We sent an email to <strong class="wrap">${escapeHtml(args.email)}</strong>.
       ${open}</p>
     <p class="muted">The link works once and expires in ${args.hours} ${args.hours === 1 ? 'hour' : 'hours'}.
       If this address already has an account, the email says how to sign in to it instead.</p>
     <p>Wrong address? <a href="${escapeHtml(args.signUpUrl)}">Start again</a></p>
     <p>Already confirmed? <a href="${escapeHtml(args.signInUrl)}">Sign in</a></p>`,
  );
}

/** The verification page's "Continue" found nothing to continue in this browser (expired, or started elsewhere). */
export function nothingToContinuePage(reply: FastifyReply, args: { signInUrl: string }): FastifyReply {
  return sendPage(
    reply,
    200,
    'Sign in again',
    `<h1>Sign in again</h1>
     <p>The sign-in you started has expired, or was started in another browser.
       Go back to the application and sign in again with your new account.</p>
     <p>Or <a href="${escapeHtml(args.signInUrl)}">sign in to your account</a> here.</p>`,
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
