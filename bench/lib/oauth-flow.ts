import { createHash, randomBytes } from 'node:crypto';

/**
 * The authorization code flow with PKCE over HTTP, as a public client and a
 * browser without JavaScript run it (a small version of
 * test/helpers/oauth.ts's Browser, which cannot be imported here: that module
 * starts the test servers). Register a client with POST /oauth/register; the
 * first authorization signs in and consents through the forms (CSRF cookie +
 * field); later ones ride on the session cookie and the remembered consent,
 * so /oauth/authorize answers with the code at once.
 */

export const REDIRECT_URI = 'http://127.0.0.1/callback';

export interface TokenSet {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

const TIMEOUT_MS = 15_000;

interface Page {
  status: number;
  location: string | null;
  text: string;
}

/** Keeps cookies (one origin, one path) and follows no redirect by itself. */
class Browser {
  readonly cookies = new Map<string, string>();

  async request(url: string, form?: Record<string, string>): Promise<Page> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers['cookie'] = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (form) {
      body = new URLSearchParams(form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(url, {
      method: body ? 'POST' : 'GET',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return { status: res.status, location: res.headers.get('location'), text: await res.text() };
  }

  /** Hidden form fields of a page. */
  static fields(html: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = m[2]!.replaceAll('&amp;', '&');
    return out;
  }
}

async function postJson(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** A signed-in user of one registered public client, able to run as many authorizations as asked. */
export class OAuthUser {
  readonly base: string;
  readonly clientId: string;
  readonly #who: { email: string; password: string };
  readonly #browser = new Browser();

  private constructor(base: string, clientId: string, who: { email: string; password: string }) {
    this.base = base;
    this.clientId = clientId;
    this.#who = who;
  }

  /** Registers a public client (RFC 7591, token_endpoint_auth_method none) for the loopback redirect URI. */
  static async register(base: string, who: { email: string; password: string }): Promise<OAuthUser> {
    const { status, json } = await postJson(`${base}/oauth/register`, {
      client_name: 'bench',
      application_type: 'native',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
    });
    if (status !== 201 || typeof json['client_id'] !== 'string') throw new Error(`client registration: ${status} ${JSON.stringify(json)}`);
    return new OAuthUser(base, json['client_id'], who);
  }

  /** One authorization (scope identity): authorize, sign in and consent when asked, then the code for tokens. */
  async authorize(): Promise<TokenSet> {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const url = new URL(`${this.base}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: this.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'identity',
      state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    const callback = await this.#walk(url.toString());
    if (callback.searchParams.get('state') !== state) throw new Error(`authorization: state mismatch in ${callback}`);
    const code = callback.searchParams.get('code');
    if (!code) throw new Error(`authorization: no code in ${callback}`);
    const tokens = await this.token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier });
    if (tokens.status !== 200) throw new Error(`code exchange: ${tokens.status} ${tokens.text}`);
    return JSON.parse(tokens.text) as TokenSet;
  }

  /** POST /oauth/token as this public client (client_id in the body, no secret). */
  async token(params: Record<string, string>): Promise<{ status: number; text: string }> {
    const res = await fetch(`${this.base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...params, client_id: this.clientId }).toString(),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return { status: res.status, text: await res.text() };
  }

  /** Follows the authorization request to the redirect back to the application. */
  async #walk(authorizeUrl: string): Promise<URL> {
    let next = await this.#browser.request(authorizeUrl);
    for (let step = 0; step < 6; step++) {
      if (next.status !== 302 && next.status !== 303) throw new Error(`authorization: expected a redirect, got ${next.status}: ${next.text.slice(0, 300)}`);
      const location = new URL(next.location!, this.base);
      if (location.pathname === '/oauth/login' && location.origin === new URL(this.base).origin) {
        const page = await this.#browser.request(location.toString());
        next = await this.#browser.request(`${this.base}/oauth/login`, { ...Browser.fields(page.text), ...this.#who });
      } else if (location.pathname === '/oauth/consent' && location.origin === new URL(this.base).origin) {
        const page = await this.#browser.request(location.toString());
        next = await this.#browser.request(`${this.base}/oauth/consent`, { ...Browser.fields(page.text), decision: 'approve' });
      } else {
        if (location.searchParams.has('error')) throw new Error(`authorization refused: ${location}`);
        return location;
      }
    }
    throw new Error('authorization: too many redirects');
  }
}
