import type { FastifyReply } from 'fastify';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { margin: 0; display: grid; place-items: center; min-height: 100vh; background: Canvas; color: CanvasText; }
  main { box-sizing: border-box; width: min(26rem, 100% - 2rem); margin: 1rem 0; padding: 1.5rem; border: 1px solid GrayText; border-radius: 0.75rem; }
  h1 { font-size: 1.4rem; margin-top: 0; }
  button { font: inherit; padding: 0.6rem 1.2rem; border-radius: 0.5rem; border: 0; background: #2556d8; color: #fff; cursor: pointer; }
  button:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
  .error { color: #c0262d; }
  label { display: block; margin: 0.8rem 0 0.2rem; font-weight: 600; }
  input[type=email], input[type=password] { font: inherit; width: 100%; box-sizing: border-box; padding: 0.55rem; border: 1px solid GrayText; border-radius: 0.4rem; }
  .actions { display: flex; gap: 0.75rem; margin-top: 1.2rem; flex-wrap: wrap; }
  button.secondary { background: transparent; color: CanvasText; border: 1px solid GrayText; }
  button.link { background: none; border: 0; padding: 0; color: inherit; font-size: inherit; text-decoration: underline; }
  form.switch { margin-top: 1.2rem; }
  ul.scopes { padding-left: 1.2rem; }
  h2 { font-size: 1.1rem; margin: 1.5rem 0 0.25rem; }
  ul.items { list-style: none; padding: 0; margin: 0; }
  ul.items > li { border-top: 1px solid GrayText; padding: 0.75rem 0; }
  ul.items p { margin: 0.2rem 0; }
  ul.items form { margin-top: 0.5rem; }
  .badge { font-size: 0.8rem; padding: 0 0.4rem; border: 1px solid currentColor; border-radius: 0.4rem; white-space: nowrap; }
  .wrap { overflow-wrap: anywhere; }
  .sr-only { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; border: 0; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  .muted { color: color-mix(in srgb, CanvasText 72%, Canvas); font-size: 0.9rem; }
`;

const CSP_SOURCE = /^(?:[a-z][a-z0-9+.-]*:|(?:[a-z][a-z0-9+.-]*:\/\/)?(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?)$/i;

/**
 * Is this a CSP source expression we may put in a header (CSP3 section 2.3.1): a
 * scheme-source (`com.example.app:`) or a host-source with optional scheme
 * and port (`https://app.example:8443`, `http://[::1]:9000`). Anything else,
 * above all `;` (ends the directive), `,` (starts another policy), quotes or
 * whitespace, could rewrite the policy; sendPage drops such a source.
 */
export function isCspSource(source: string): boolean {
  return CSP_SOURCE.test(source);
}

/**
 * A complete server-rendered page with headers that keep it out of frames,
 * caches and referrers. `body` must already be escaped.
 */
export function sendPage(
  reply: FastifyReply,
  status: number,
  title: string,
  body: string,
  options: { formAction?: string[] } = {},
): FastifyReply {
  // form-action also governs where a form's response may redirect, so pages whose
  // POST ends in a redirect to an application list that application's origin.
  // Defence in depth: redirect URIs are checked at registration, but a source that could rewrite the policy never reaches it.
  const formAction = ["'self'", ...(options.formAction ?? []).filter(isCspSource)].join(' ');
  return reply
    .status(status)
    .type('text/html; charset=utf-8')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .header('x-frame-options', 'DENY')
    // same-origin, not no-referrer: under no-referrer browsers send `Origin: null` on our own
    // form posts, which the CSRF Origin check must refuse. URLs still never leave the origin.
    .header('referrer-policy', 'same-origin')
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
        `<meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>` +
        `<body><main>${body}</main></body></html>`,
    );
}
