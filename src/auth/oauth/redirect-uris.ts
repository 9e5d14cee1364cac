/**
 * Redirect URI rules, one function for registration and authorization alike
 * (a URI that registers must also be accepted at /authorize, and vice versa).
 *
 * Accepted (RFC 9700 section 2.1, RFC 8252 sections 7.1 to 7.3):
 * - https URLs (web clients, claimed https schemes of native apps);
 * - http only on a loopback host: 127.0.0.1, [::1] or localhost;
 * - private-use schemes in reverse-domain form (`com.example.app:/cb`), for native apps only.
 * Never: fragments, userinfo, wildcards, other http hosts, other schemes.
 */
export type ApplicationType = 'web' | 'native';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+$/;
const FORBIDDEN_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'blob', 'about', 'ftp', 'ws', 'wss']);

/** Why a redirect URI is refused, or null when it is acceptable for the application type. */
export function redirectUriProblem(uri: string, applicationType: ApplicationType): string | null {
  if (uri.length > 2000) return 'is longer than 2000 characters';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URI';
  }
  if (url.hash !== '' || uri.includes('#')) return 'must not contain a fragment';
  if (url.username !== '' || url.password !== '') return 'must not contain user information';
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') return url.hostname === '' ? 'has no host' : null;
  if (scheme === 'http') {
    return LOOPBACK_HOSTS.has(url.hostname) ? null : 'may use http only on a loopback address (127.0.0.1, [::1], localhost)';
  }
  if (FORBIDDEN_SCHEMES.has(scheme) || !PRIVATE_USE_SCHEME.test(scheme)) {
    return 'must be https, loopback http, or a private-use scheme in reverse-domain form (com.example.app:/callback)';
  }
  return applicationType === 'native' ? null : 'uses a private-use scheme, which only native applications may register';
}

function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * Does `requested` match one of `registered`? Exact string comparison, but
 * for loopback http redirects the port may differ (RFC 8252 section 7.3: a
 * native app picks a free port at run time).
 */
export function redirectUriMatches(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  let req: URL;
  try {
    req = new URL(requested);
  } catch {
    return false;
  }
  if (!isLoopbackHttp(req) || req.hash !== '' || req.username !== '' || req.password !== '') return false;
  return registered.some((r) => {
    const reg = new URL(r);
    return isLoopbackHttp(reg) && reg.hostname === req.hostname && reg.pathname === req.pathname && reg.search === req.search;
  });
}
