import type { FastifyReply, FastifyRequest } from 'fastify';
import { type ReturnPath, returnPath } from './return-paths.ts';

/**
 * Where a sign-up was going, so that the verification page can offer to
 * continue there once the address is confirmed: the pending authorization
 * request the sign-up page carried (by id; /oauth/signup/continue checks it is
 * still live), or one of the service's own pages (the closed list of
 * return-paths.ts).
 */
export type Continuation = ({ kind: 'authorize'; requestId: string } | { kind: 'return'; path: ReturnPath }) & {
  /** The address the sign-up named (normalised), for the "Check your email" page. */
  email: string;
};

/** A normalised address is at most 254 characters (normalizeEmail); the whole value, encoded, well under 2 KB. */
const EMAIL_MAX = 254;
const VALUE_MAX = 2048;
/** Pending request ids are UUIDs (authorize.ts); anything else in the cookie is ignored. */
const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The continuation cookie (`auth_signup`, `__Host-auth_signup` with secure
 * cookies): set by the sign-up form, read by the "Check your email" page, the
 * verification page and /oauth/signup/continue, cleared there. It holds no
 * secret (the address its own browser typed) and grants nothing: it only names where to go next, each value checked on the way
 * back (a live pending request; a path of the closed list), and the next
 * step is always our own sign-in page. It lives as long as the emailed link.
 * The link opened in another browser has no cookie: that browser is told to
 * go back to the application (a pending request is bound to the browser that
 * started it anyway: the client checks its own state there).
 */
export class SignupContinuation {
  readonly #name: string;
  readonly #cookie: { path: string; httpOnly: boolean; sameSite: 'lax'; secure: boolean };
  readonly #maxAgeSeconds: number;

  constructor(options: { secureCookies: boolean; maxAgeMs: number }) {
    this.#name = options.secureCookies ? '__Host-auth_signup' : 'auth_signup';
    this.#cookie = { path: '/', httpOnly: true, sameSite: 'lax', secure: options.secureCookies };
    this.#maxAgeSeconds = Math.ceil(options.maxAgeMs / 1000);
  }

  remember(reply: FastifyReply, continuation: Continuation): void {
    const value = new URLSearchParams(
      continuation.kind === 'authorize' ? { request: continuation.requestId } : { return_to: continuation.path },
    );
    value.set('email', continuation.email);
    reply.setCookie(this.#name, value.toString(), { ...this.#cookie, maxAge: this.#maxAgeSeconds });
  }

  /** The continuation this browser carries, or null (none, or not one we could have set). */
  read(request: FastifyRequest): Continuation | null {
    const raw = request.cookies[this.#name];
    if (!raw || raw.length > VALUE_MAX) return null;
    const value = new URLSearchParams(raw);
    const email = value.get('email') ?? '';
    if (email.length > EMAIL_MAX) return null;
    const requestId = value.get('request');
    if (requestId !== null) return REQUEST_ID.test(requestId) ? { kind: 'authorize', requestId, email } : null;
    const path = returnPath(value.get('return_to') ?? undefined);
    return path ? { kind: 'return', path, email } : null;
  }

  forget(reply: FastifyReply): void {
    // With the attributes it was set with: a __Host- cookie is only replaced by one that is Secure, Path=/.
    reply.clearCookie(this.#name, this.#cookie);
  }
}
