import { createHmac, hkdfSync } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { safeEqual } from '../../platform/crypto.ts';
import { HttpProblem } from '../../platform/errors.ts';

/**
 * CSRF defence of the console's forms, in the order `checkPost` applies it:
 * 1. Fetch metadata: a browser that sends `Sec-Fetch-Site` must say
 *    `same-origin` (a sibling subdomain is `same-site` and refused too);
 * 2. `Origin`, when sent, must be this gateway's (GATEWAY_BASE_URL's origin,
 *    or the origin the request was addressed to);
 * 3. a synchronizer token in the form's `csrf` field, tied to what the
 *    browser holds: HMAC-SHA-256 over the console session (the SHA-256 of
 *    its token), or before sign-in over the pre-session cookie, under a key
 *    derived from GATEWAY_ENCRYPTION_KEY. Nothing is stored: the session
 *    row of gateway-sessions.ts is the only state, and a token from another
 *    session, another browser or a guess never matches.
 * Each failure is a 403 page; nothing has been read from or written for the
 * tenant by then.
 */
export type CsrfBinding = { kind: 'session'; sessionHash: string } | { kind: 'pre-session'; value: string };

export class CsrfTokens {
  readonly #key: Buffer;

  constructor(encryptionKey: Buffer) {
    // HKDF (RFC 5869) with a label of its own: the sealing key itself never signs anything.
    this.#key = Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), 'gateway console csrf v1', 32));
  }

  /** The token the forms of a page bound to `binding` carry. */
  tokenFor(binding: CsrfBinding): string {
    const bound = binding.kind === 'session' ? `session:${binding.sessionHash}` : `pre-session:${binding.value}`;
    return createHmac('sha256', this.#key).update(bound).digest('base64url');
  }

  /** Throws a 403 HttpProblem unless the request came from one of our own pages bound to `binding`. */
  checkPost(request: FastifyRequest, binding: CsrfBinding | undefined, allowedOrigins: readonly string[]): void {
    checkFetchSite(request);
    checkOrigin(request, allowedOrigins);
    const field = (request.body as Record<string, unknown> | undefined)?.['csrf'];
    if (binding === undefined || typeof field !== 'string' || !safeEqual(field, this.tokenFor(binding))) {
      throw csrfRefused('This form has expired or did not come from this console. Go back, reload the page and try again.');
    }
  }
}

const csrfRefused = (message: string) => new HttpProblem(403, 'csrf_failed', message);

function checkFetchSite(request: FastifyRequest): void {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') throw csrfRefused('This form was sent from another site; the console accepts forms only from its own pages.');
}

function checkOrigin(request: FastifyRequest, allowedOrigins: readonly string[]): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  const own = `${request.protocol}://${request.host}`;
  if (origin !== own && !allowedOrigins.includes(origin)) throw csrfRefused('This form was sent from another site; the console accepts forms only from its own pages.');
}
