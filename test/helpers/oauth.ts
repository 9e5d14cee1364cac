import * as oauth from 'oauth4webapi';
import { API_KEY, type TestAuth, startTestAuth } from './auth.ts';
import type { TestDatabase } from './database.ts';
import type { DbKind } from './env.ts';

export const STATIC_CLIENT_ID = 'product-web';
export const STATIC_CLIENT_SECRET = 'static-client-secret-0123456789abcdef';
export const STATIC_REDIRECT = 'https://product.example/callback';

/**
 * The account service with OAuth enabled. `publicEndpoints: false` is the
 * default deployment: the OAuth paths need X-Api-Key, which a product's edge
 * adds; `edgeFetch` below plays that edge for oauth4webapi.
 */
export async function startOAuth(kind: DbKind | TestDatabase, options: { publicEndpoints?: boolean; env?: Record<string, string> } = {}): Promise<TestAuth> {
  return startTestAuth(kind, {
    OAUTH_CLIENT_ID: STATIC_CLIENT_ID,
    OAUTH_CLIENT_SECRET: STATIC_CLIENT_SECRET,
    OAUTH_CLIENT_REDIRECT_URIS: `${STATIC_REDIRECT},http://127.0.0.1/callback`,
    OAUTH_PUBLIC_ENDPOINTS: options.publicEndpoints === false ? 'false' : 'true',
    OAUTH_CLIENT_METADATA_ALLOW_INSECURE: 'true',
    AUTH_LIMIT_LOGIN: '1000/300',
    AUTH_LIMIT_REGISTER: '1000/3600',
    ...options.env,
  });
}

/** oauth4webapi options for a test: http allowed, and the edge's X-Api-Key when the endpoints are not public. */
export function clientOptions(withKey: boolean) {
  return {
    [oauth.allowInsecureRequests]: true,
    ...(withKey ? { [oauth.customFetch]: edgeFetch } : {}),
  };
}

/** What a product's edge does when it forwards the OAuth paths: adds the key. */
export const edgeFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('x-api-key', API_KEY);
  return fetch(input, { ...init, headers });
};

export async function discover(auth: TestAuth, withKey: boolean): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(auth.url);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...clientOptions(withKey) });
  return oauth.processDiscoveryResponse(issuer, response);
}

/** A browser without JavaScript: follows redirects by hand and keeps cookies per origin path. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly withKey: boolean;
  constructor(withKey: boolean) {
    this.withKey = withKey;
  }

  async request(url: string, init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...init.headers };
    if (this.withKey) headers['x-api-key'] = API_KEY;
    if (this.cookies.size) headers['cookie'] = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      body = new URLSearchParams(init.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, text: await res.text() };
  }

  /** Hidden form fields of a page. */
  static fields(html: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = m[2]!.replaceAll('&amp;', '&');
    return out;
  }

  /**
   * Walks an authorization request to the application's redirect: signs in
   * when asked, then approves or denies consent when asked. Returns the final
   * redirect URL (to the application).
   */
  async authorize(authUrl: string, who: { email: string; password: string }, decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
    let next = await this.request(authUrl);
    for (let step = 0; step < 6; step++) {
      if (next.status !== 302 && next.status !== 303) throw new Error(`expected a redirect, got ${next.status}: ${next.text.slice(0, 300)}`);
      const location = new URL(next.location!);
      if (location.pathname === '/oauth/login') {
        const page = await this.request(location.toString());
        next = await this.request(`${location.origin}/oauth/login`, { form: { ...Browser.fields(page.text), email: who.email, password: who.password } });
      } else if (location.pathname === '/oauth/consent') {
        const page = await this.request(location.toString());
        next = await this.request(`${location.origin}/oauth/consent`, { form: { ...Browser.fields(page.text), decision } });
      } else {
        return location;
      }
    }
    throw new Error('too many redirects');
  }
}

export async function pkce() {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

export function authorizationUrl(as: oauth.AuthorizationServer, params: Record<string, string>): string {
  const url = new URL(as.authorization_endpoint!);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}
