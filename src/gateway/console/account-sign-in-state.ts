import { hkdfSync, randomBytes } from 'node:crypto';
import { decrypt, encrypt, safeEqual, sha256 } from '../../platform/crypto.ts';

/**
 * What the console keeps between sending a browser to the account service and
 * its return: the `state` (RFC 6749 section 10.12) and the PKCE verifier
 * (RFC 7636), sealed with AES-256-GCM under a key derived (HKDF) from
 * GATEWAY_ENCRYPTION_KEY into an HttpOnly cookie of that browser, valid 10
 * minutes. Nothing is stored on the server, so any replica can finish a
 * sign-in another started. The callback clears the cookie before it does
 * anything else (one use per browser); the code it carries is single use at
 * the account service, which is what refuses a callback replayed with a
 * copied cookie.
 */
export interface PendingSignIn {
  state: string;
  verifier: string;
  /** S256 challenge of the verifier (RFC 7636 section 4.2). */
  challenge: string;
}

export const SIGN_IN_TTL_MS = 10 * 60_000;
const LABEL = 'gateway console account sign-in v1';

export class SignInStates {
  readonly #key: Buffer;

  constructor(encryptionKey: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), LABEL, 32));
  }

  /** A fresh state and verifier, and the cookie value that carries them. */
  start(now: number): { pending: PendingSignIn; sealed: string } {
    const state = randomBytes(32).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const sealed = encrypt(this.#key, JSON.stringify({ state, verifier, expiresAt: now + SIGN_IN_TTL_MS }), LABEL);
    return { pending: { state, verifier, challenge: sha256(verifier) }, sealed };
  }

  /**
   * The verifier of the sign-in whose `state` came back, or why not: no
   * cookie (another browser, a reused or finished sign-in), a cookie that
   * does not open (altered, another key) or has expired, or a state that is
   * not the one sent (compared in constant time).
   */
  finish(sealed: string | undefined, state: string, now: number): { verifier: string } | { refused: 'missing' | 'expired' | 'mismatch' } {
    if (!sealed) return { refused: 'missing' };
    let value: { state?: unknown; verifier?: unknown; expiresAt?: unknown };
    try {
      value = JSON.parse(decrypt(this.#key, sealed, LABEL)) as typeof value;
    } catch {
      return { refused: 'mismatch' };
    }
    if (typeof value.state !== 'string' || typeof value.verifier !== 'string' || typeof value.expiresAt !== 'number') return { refused: 'mismatch' };
    if (value.expiresAt <= now) return { refused: 'expired' };
    if (!safeEqual(value.state, state)) return { refused: 'mismatch' };
    return { verifier: value.verifier };
  }
}
