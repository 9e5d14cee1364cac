import { createHmac } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { compare, genSaltSync, hash } from 'bcrypt';

/**
 * Passwords are stored as bcrypt(prehash(password)). bcrypt reads only the
 * first 72 bytes of its input, so two long passwords sharing a prefix would
 * collide; the prehash (base64 of HMAC-SHA-256 under a fixed, public label)
 * turns any password into 44 ASCII bytes that depend on every character, with
 * no NUL byte for bcrypt to stop at. The label is a domain separator, not a
 * secret: the hash's strength is bcrypt's. Passwords are NFC-normalised first,
 * so the same password typed on two keyboards matches.
 *
 * The `bcrypt` package (6.x, the OpenBSD C code with its binaries prebuilt
 * inside the npm package) was measured the fastest implementation that
 * `npm ci` installs here (bench/lib/bcrypt-candidates.ts times each one it
 * can load). Its hash and compare run as N-API async work, that is on the
 * libuv thread pool, off the event loop. That pool (4 threads by default)
 * also serves file I/O and getaddrinfo (SMTP connects), so at most one hash
 * per core runs at once: a burst of logins then queues here instead of
 * stalling file or DNS work behind it, and throughput is the same (the cores
 * are the limit either way).
 *
 * Stored hashes written before by @node-rs/bcrypt carry the "$2y$" label,
 * which the `bcrypt` package refuses. "$2y$" (crypt_blowfish's label) and
 * "$2b$" (OpenBSD's) name the same corrected algorithm and give the same hash
 * for the same salt and input, so a "$2y$" hash is verified as "$2b$"
 * (test/auth/password-hashes.test.ts checks one made by @node-rs/bcrypt).
 */
const PREHASH_KEY = 'accounts/password-prehash/v1';

/** The npm package that computes the hashes (the login benchmark names it beside the others it can load). */
export const BCRYPT_PACKAGE = 'bcrypt';

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;

const MAX_CONCURRENT = Math.max(1, Math.min(availableParallelism(), 3));
let running = 0;
const waiting: (() => void)[] = [];

async function limited<T>(work: () => Promise<T>): Promise<T> {
  if (running >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

function prehash(password: string): string {
  return createHmac('sha256', PREHASH_KEY).update(password.normalize('NFC'), 'utf8').digest('base64');
}

/** "$2y$" and "$2b$" are the same algorithm (see above); the package knows only the OpenBSD label. */
const asOpenBsdLabel = (stored: string) => (stored.startsWith('$2y$') ? `$2b$${stored.slice(4)}` : stored);

export function hashPassword(password: string, cost: number): Promise<string> {
  const input = prehash(password);
  // The salt is made here (crypto.randomBytes) rather than by bcrypt.hash(input, cost), which would take a second trip through the pool for it.
  return limited(() => hash(input, genSaltSync(cost)));
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  try {
    const input = prehash(password);
    return await limited(() => compare(input, asOpenBsdLabel(stored)));
  } catch {
    return false;
  }
}

/**
 * The cost a stored hash was made with ("$2b$12$..." is 12), or NaN for a
 * string that is no bcrypt hash. A sign-in stores the hash again when this is
 * not AUTH_BCRYPT_COST (login.ts), so that after a change of cost accounts
 * hashed at the old one stop answering in the old time.
 */
export function hashCost(stored: string): number {
  const m = /^\$2[abxy]\$(\d\d)\$/.exec(stored);
  return m ? Number(m[1]) : Number.NaN;
}

const dummyHashes = new Map<number, Promise<string>>();

/**
 * A hash to check against when the email is unknown, so that a login for an
 * unknown address costs the same bcrypt time as one for a known address.
 */
export function dummyHash(cost: number): Promise<string> {
  let h = dummyHashes.get(cost);
  if (!h) {
    h = hashPassword('dummy password that matches nothing', cost);
    dummyHashes.set(cost, h);
  }
  return h;
}

/** Length in characters (code points), as a person counts them. */
export function passwordLength(password: string): number {
  let n = 0;
  for (const _ of password) n++;
  return n;
}
