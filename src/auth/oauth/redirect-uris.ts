/**
 * Redirect URI rules, one function for registration and authorization alike
 * (a URI that registers must also be accepted at /authorize, and vice versa).
 *
 * Accepted (RFC 9700 section 2.1, RFC 8252 sections 7.1 to 7.3):
 * - https URLs (web clients, claimed https schemes of native apps);
 * - http only on a loopback host: 127.0.0.1, [::1] or localhost;
 * - private-use schemes in reverse-domain form (`com.example.app:/cb`), for native apps only.
 * Never: fragments, userinfo, wildcards, other http hosts, other schemes, or a
 * host the pages' Content-Security-Policy could not carry.
 */
export type ApplicationType = 'web' | 'native';

/** Longest redirect URI accepted (RFC 7591 sets none; real ones are far shorter). */
export const MAX_REDIRECT_URI_LENGTH = 512;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
/** RFC 8252 section 8.3: loopback IP literals, not `localhost` (which a resolver or hosts file may send elsewhere). */
const LOOPBACK_IP_LITERALS = new Set(['127.0.0.1', '[::1]']);
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+$/;
const FORBIDDEN_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'blob', 'about', 'ftp', 'ws', 'wss']);
/**
 * A host a CSP host-source can name (CSP3 section 2.3.1: host-char is ALPHA,
 * DIGIT or "-", in dot-separated labels), or a bracketed IPv6 literal. The
 * WHATWG URL parser lets `;`, `,`, `'`, `*`, `_` and more through in hosts;
 * in the pages' form-action they would end the directive or the policy.
 */
const CSP_HOST = /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])$/;

/** Why a redirect URI is refused, or null when it is acceptable for the application type. */
export function redirectUriProblem(uri: string, applicationType: ApplicationType): string | null {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) return `is longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URI';
  }
  if (url.hash !== '' || uri.includes('#')) return 'must not contain a fragment';
  if (url.username !== '' || url.password !== '') return 'must not contain user information';
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https' || scheme === 'http') {
    if (url.hostname === '') return 'has no host';
    if (!CSP_HOST.test(url.hostname)) return 'has a host with characters other than letters, digits, "-" and "."';
    if (scheme === 'https') return null;
    return LOOPBACK_HOSTS.has(url.hostname) ? null : 'may use http only on a loopback address (127.0.0.1, [::1], localhost)';
  }
  if (FORBIDDEN_SCHEMES.has(scheme) || !PRIVATE_USE_SCHEME.test(scheme)) {
    return 'must be https, loopback http, or a private-use scheme in reverse-domain form (com.example.app:/callback)';
  }
  return applicationType === 'native' ? null : 'uses a private-use scheme, which only native applications may register';
}

function parse(uri: string): URL | null {
  try {
    return new URL(uri);
  } catch {
    return null;
  }
}

/**
 * Does `requested` match one of `registered`? Exact string comparison
 * (RFC 9700 section 4.1.3), with one exception: for a native client, an http
 * redirect to the loopback IP literal 127.0.0.1 or [::1] may use any port,
 * because the app picks a free port at run time (RFC 8252 sections 7.3 and
 * 8.3). Web clients (the static confidential client included) and `localhost`
 * always match exactly. A URI the registration rules refuse never matches.
 */
export function redirectUriMatches(registered: readonly string[], requested: string, applicationType: ApplicationType): boolean {
  // The registration rules again, for registrations and metadata documents accepted under older rules.
  if (redirectUriProblem(requested, applicationType) !== null) return false;
  if (registered.includes(requested)) return true;
  if (applicationType !== 'native') return false;
  const req = parse(requested);
  if (!req || !isLoopbackIpHttp(req) || req.hash !== '' || req.username !== '' || req.password !== '') return false;
  return registered.some((r) => {
    const reg = parse(r);
    return reg !== null && isLoopbackIpHttp(reg) && reg.hostname === req.hostname && reg.pathname === req.pathname && reg.search === req.search;
  });
}

function isLoopbackIpHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_IP_LITERALS.has(url.hostname);
}
