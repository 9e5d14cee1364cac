import type { FastifyReply } from 'fastify';
import { escapeHtml, sendPage } from '../platform/html.ts';
import { hidden } from './oauth/pages.ts';
import type { UserGrant } from './oauth/user-grants.ts';
import { SCOPES } from './scopes.ts';
import type { SessionInfo } from './sessions.ts';

/** What the page says after an action (a closed list: the query names one, nothing from it is shown). */
export const NOTICES = {
  session: 'The device is signed out.',
  grant: 'The application can no longer act for you. It will have to ask again.',
} as const;

export type Notice = keyof typeof NOTICES;

export function isNotice(value: string | undefined): value is Notice {
  return value !== undefined && Object.hasOwn(NOTICES, value);
}

/** An ISO time as people read it: in UTC, to the minute. */
function plainTime(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** The same in a <time> element, with the exact time for machines. */
function time(iso: string): string {
  return `<time datetime="${escapeHtml(iso)}">${escapeHtml(plainTime(iso))}</time>`;
}

function sessionItem(s: SessionInfo, args: { signOutAction: string; csrf: string }): string {
  const badge = s.current ? ' <span class="badge">This device</span>' : '';
  const lastUsed = s.last_used_at ? ` · last active ${time(s.last_used_at)}` : '';
  const agent = s.user_agent ? `<p class="muted wrap">${escapeHtml(s.user_agent)}</p>` : '';
  // Every button says which device it signs out: a screen reader lists the buttons by name.
  const which = s.current ? 'this device' : `${s.device}, signed in ${plainTime(s.created_at)} from ${s.ip}`;
  return `<li>
      <p><strong>${escapeHtml(s.device)}</strong>${badge}</p>
      <p class="muted">Signed in ${time(s.created_at)} from ${escapeHtml(s.ip)}${lastUsed}</p>
      ${agent}
      <form method="post" action="${escapeHtml(args.signOutAction)}">
        ${hidden('session', s.id)}${hidden('csrf', args.csrf)}
        <button type="submit" class="secondary">Sign out<span class="sr-only"> ${escapeHtml(which)}</span></button>
      </form>
    </li>`;
}

function grantItem(g: UserGrant, args: { revokeAction: string; csrf: string }): string {
  const host = g.client_host ? ` <span class="muted">at ${escapeHtml(g.client_host)}</span>` : '';
  const scopes = g.scope
    .split(' ')
    .filter((s) => s !== '')
    .map((s) => `<li>${escapeHtml(SCOPES[s] ?? s)} <span class="muted">(${escapeHtml(s)})</span></li>`)
    .join('');
  const lastUsed = g.last_used_at ? ` · last used ${time(g.last_used_at)}` : '';
  return `<li>
      <p><strong>${escapeHtml(g.client_name)}</strong>${host}</p>
      <ul class="scopes">${scopes}</ul>
      <p class="muted">Allowed ${time(g.granted_at)}${lastUsed}</p>
      <form method="post" action="${escapeHtml(args.revokeAction)}">
        ${hidden('client_id', g.client_id)}${hidden('csrf', args.csrf)}
        <button type="submit" class="secondary">Revoke<span class="sr-only"> access of ${escapeHtml(g.client_name)}</span></button>
      </form>
    </li>`;
}

/** This browser's session first, then the others in the list's order (newest first). */
function thisDeviceFirst(sessions: SessionInfo[]): SessionInfo[] {
  return [...sessions.filter((s) => s.current), ...sessions.filter((s) => !s.current)];
}

/**
 * The account page: who is signed in, every signed-in device with a "Sign
 * out" button, every application with access with a "Revoke" button. Plain
 * forms (no script), each with the CSRF token.
 */
export function accountPage(
  reply: FastifyReply,
  args: {
    email: string;
    sessions: SessionInfo[];
    grants: UserGrant[];
    csrf: string;
    signOutAction: string;
    revokeAction: string;
    notice: Notice | null;
  },
): FastifyReply {
  const notice = args.notice ? `<p role="status">${escapeHtml(NOTICES[args.notice])}</p>` : '';
  const grants =
    args.grants.length > 0
      ? `<ul class="items" aria-labelledby="applications">${args.grants.map((g) => grantItem(g, args)).join('')}</ul>`
      : '<p class="muted">No application can act for you.</p>';
  return sendPage(
    reply,
    200,
    'Your account',
    `<h1>Your account</h1>
     <p>Signed in as ${escapeHtml(args.email)}.</p>
     ${notice}
     <h2 id="devices">Signed-in devices</h2>
     <ul class="items" aria-labelledby="devices">${thisDeviceFirst(args.sessions).map((s) => sessionItem(s, args)).join('')}</ul>
     <h2 id="applications">Applications that can act for you</h2>
     ${grants}`,
  );
}
