import type { FastifyReply } from 'fastify';
import { escapeHtml } from '../../platform/html.ts';
import type { ConsoleAssets } from './assets.ts';
import { csrfField } from './forms.ts';

/**
 * Every console page's policy: scripts and styles only from files the
 * gateway serves (no inline script or style, no eval), images from itself or
 * data: URLs (charts exported as images), fetches only to itself, forms
 * posting only to itself, never framed, no <base> rewriting.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The policy of a page whose form posts to the console and is answered with a
 * redirect to another origin (the account sign-in's button, redirected to the
 * account service's authorization endpoint): browsers hold every redirect of
 * a form submission to form-action, so that origin is added there, and only there.
 */
export function consoleCsp(formActionOrigins: readonly string[] = []): string {
  if (formActionOrigins.length === 0) return CONSOLE_CSP;
  return CONSOLE_CSP.replace("form-action 'self'", `form-action 'self' ${formActionOrigins.join(' ')}`);
}

export type NavId = 'overview' | 'usage' | 'requests' | 'api-keys' | 'provider-keys' | 'settings' | 'quick-start';

/** The console's sections, in order; those without `href` are not built yet and show as "coming". */
const NAV: readonly { id: NavId; label: string; href?: string }[] = [
  { id: 'overview', label: 'Overview', href: '/' },
  { id: 'usage', label: 'Usage', href: '/usage' },
  { id: 'requests', label: 'Requests', href: '/requests' },
  { id: 'api-keys', label: 'API keys', href: '/api-keys' },
  { id: 'provider-keys', label: 'Provider keys', href: '/provider-keys' },
  { id: 'settings', label: 'Settings', href: '/settings' },
  { id: 'quick-start', label: 'Quick start', href: '/quick-start' },
];

export interface PageFrame {
  assets: ConsoleAssets;
  title: string;
  /** Signed in: the workspace shown in the header, the section to mark, and the CSRF token of the sign-out form. */
  signedIn?: { workspace: string; email: string; current: NavId | undefined; csrf: string } | undefined;
}

/** A whole console page around `body` (already escaped), which starts with the page's one h1. */
export function renderPage(frame: PageFrame, body: string): string {
  const { assets, title, signedIn } = frame;
  const header = signedIn
    ? `<header class="top">
        <a class="brand" href="/">AI gateway</a>
        <p class="workspace"><span class="sr-only">Workspace: </span>${escapeHtml(signedIn.workspace)} <span class="muted">${escapeHtml(signedIn.email)}</span></p>
        <form method="post" action="/sign-out" class="sign-out">${csrfField(signedIn.csrf)}<button type="submit" class="secondary">Sign out</button></form>
      </header>
      <nav aria-label="Console" class="sections"><ul>${NAV.map((item) => navItem(item, signedIn.current)).join('')}</ul></nav>`
    : `<header class="top"><span class="brand">AI gateway</span></header>`;
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)} · AI gateway console</title>` +
    `<link rel="stylesheet" href="${assets.url('console.css')}">` +
    `<script src="${assets.url('console.js')}" defer></script>` +
    `</head><body class="${signedIn ? 'console' : 'console anonymous'}">` +
    '<a class="skip" href="#main">Skip to content</a>' +
    header +
    `<main id="main" tabindex="-1">${body}</main></body></html>`
  );
}

function navItem(item: (typeof NAV)[number], current: NavId | undefined): string {
  if (!item.href) return `<li class="coming-item"><span class="coming">${escapeHtml(item.label)} <span class="badge">coming</span></span></li>`;
  const here = item.id === current ? ' aria-current="page"' : '';
  return `<li><a href="${item.href}"${here}>${escapeHtml(item.label)}</a></li>`;
}

/** Sends a console page with the headers every one carries: the CSP above, never framed, cached or sniffed. */
export function sendConsolePage(reply: FastifyReply, status: number, html: string, formActionOrigins: readonly string[] = []): FastifyReply {
  return reply
    .status(status)
    .type('text/html; charset=utf-8')
    .header('content-security-policy', consoleCsp(formActionOrigins))
    .header('x-frame-options', 'DENY')
    // same-origin, not no-referrer: under no-referrer browsers send `Origin: null` on our own form posts.
    .header('referrer-policy', 'same-origin')
    .header('x-content-type-options', 'nosniff')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cache-control', 'no-store')
    .send(html);
}
