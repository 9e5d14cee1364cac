import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomToken, safeEqual } from '../../platform/crypto.ts';
import type { User } from '../schema.ts';
import { findSession, type LiveSession, revokeSession } from '../sessions.ts';
import type { OAuthDeps } from './clients.ts';
import { param } from './errors.ts';

/** A form post that did not come from our own page (a foreign Origin, or no matching CSRF token). */
export class CsrfError extends Error {}

const CSRF_TOKEN = /^csrf_[A-Za-z0-9_-]{43}$/;

/**
 * The browser session of the OAuth pages: a cookie holding a session token
 * (HttpOnly, SameSite=Lax, Secure and the __Host- prefix in production), and
 * a double-submit CSRF token: every form carries a field that must equal a
 * cookie the page set, and a cross-origin Origin is refused.
 */
export class BrowserSession {
  readonly #deps: OAuthDeps;
  readonly #session: string;
  readonly #csrf: string;
  readonly #origin: string;
  readonly #cookie: { path: string; httpOnly: boolean; sameSite: 'lax'; secure: boolean };

  constructor(deps: OAuthDeps) {
    const secure = deps.oauth.secureCookies;
    this.#deps = deps;
    this.#session = secure ? '__Host-auth_session' : 'auth_session';
    this.#csrf = secure ? '__Host-auth_csrf' : 'auth_csrf';
    this.#origin = new URL(deps.issuer).origin;
    this.#cookie = { path: '/', httpOnly: true, sameSite: 'lax', secure };
  }

  /** The browser's live session (its id and user), or null. */
  async live(request: FastifyRequest): Promise<LiveSession | null> {
    const token = request.cookies[this.#session];
    return token ? findSession(this.#deps, token) : null;
  }

  /** The signed-in user, or null. */
  async user(request: FastifyRequest): Promise<User | null> {
    return (await this.live(request))?.user ?? null;
  }

  /** Starts the browser session after a sign-in. */
  signIn(reply: FastifyReply, sessionToken: string, expiresAt: number): void {
    reply.setCookie(this.#session, sessionToken, { ...this.#cookie, expires: new Date(expiresAt) });
  }

  /** Ends the browser session: the session is revoked server-side, not only forgotten by the browser. */
  async signOut(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = request.cookies[this.#session];
    if (token) await revokeSession(this.#deps, token);
    // With the attributes it was set with: browsers ignore a __Host- cookie's clearing without Secure (RFC 6265bis 4.1.3.2).
    reply.clearCookie(this.#session, this.#cookie);
  }

  /** The page's CSRF token: the cookie's when it is well-formed, else a fresh one set as the cookie. */
  csrfToken(request: FastifyRequest, reply: FastifyReply): string {
    const existing = request.cookies[this.#csrf];
    if (existing && CSRF_TOKEN.test(existing)) return existing;
    const fresh = randomToken('csrf_');
    reply.setCookie(this.#csrf, fresh, this.#cookie);
    return fresh;
  }

  /** The CSRF token a posted form was checked against (to render the form again). */
  postedCsrf(request: FastifyRequest): string {
    return request.cookies[this.#csrf] ?? '';
  }

  /** Throws CsrfError unless the form came from our own page. */
  checkForm(request: FastifyRequest): void {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== this.#origin) throw new CsrfError('The form was posted from another site.');
    const cookieValue = request.cookies[this.#csrf];
    const field = param(request.body, 'csrf');
    if (!cookieValue || !field || !safeEqual(cookieValue, field)) {
      throw new CsrfError('The form expired or did not come from this site; reload the page.');
    }
  }
}
