import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Reply, TestAuth } from './auth.ts';
import { Browser, pkce, STATIC_CLIENT_ID, STATIC_CLIENT_SECRET } from './oauth.ts';

export const FORM = 'application/x-www-form-urlencoded';
export const LOOPBACK_CB = 'http://127.0.0.1:7777/cb';

type Fields = Record<string, string> | [string, string][];
export type Who = { email: string; password: string };

/** What an authorization request asks for; `pkce: false` sends no code_challenge. */
export interface AuthorizeParams {
  clientId: string;
  redirectUri: string;
  scope?: string;
  resource?: string;
  pkce?: boolean;
  extra?: Record<string, string>;
}

/**
 * The OAuth endpoints driven by plain fetch (form-encoded, every parameter
 * under the test's control), with a Browser per user for the pages.
 * `withKey` plays the edge of the X-Api-Key deployment.
 */
export class RawOAuth {
  readonly auth: TestAuth;
  readonly withKey: boolean;
  readonly #browsers = new Map<string, Browser>();

  constructor(auth: TestAuth, withKey = false) {
    this.auth = auth;
    this.withKey = withKey;
  }

  /** A form POST to an OAuth endpoint. */
  post(path: string, fields: Fields, headers: Record<string, string> = {}): Promise<Reply> {
    return this.auth.request('POST', path, {
      rawBody: new URLSearchParams(fields).toString(),
      headers: { 'content-type': FORM, ...headers },
      key: this.withKey ? undefined : false,
    });
  }

  token(fields: Fields, headers?: Record<string, string>): Promise<Reply> {
    return this.post('/oauth/token', fields, headers);
  }

  register(body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    return this.auth.request('POST', '/oauth/register', { body, headers, key: this.withKey ? undefined : false });
  }

  userinfo(token: string): Promise<Reply> {
    return this.auth.request('GET', '/oauth/userinfo', { token, key: this.withKey ? undefined : false });
  }

  /** Introspection as a resource server does it: with X-Api-Key. */
  introspect(token: string): Promise<Reply> {
    return this.auth.request('POST', '/oauth/introspect', {
      rawBody: new URLSearchParams({ token }).toString(),
      headers: { 'content-type': FORM },
    });
  }

  /** Registers a public client; returns its client_id. */
  async publicClient(redirectUris: string[] = [LOOPBACK_CB], extra: Record<string, unknown> = {}): Promise<string> {
    const r = await this.register({ redirect_uris: redirectUris, client_name: 'Raw test client', ...extra });
    assert.equal(r.status, 201, r.text);
    return r.body.client_id as string;
  }

  authorizeUrl(params: Record<string, string>): string {
    return `${this.auth.url}/oauth/authorize?${new URLSearchParams(params)}`;
  }

  /** The user's browser (one per user, so sign-in and consent carry over). */
  browser(who: Who): Browser {
    const known = this.#browsers.get(who.email);
    if (known) return known;
    const fresh = new Browser(this.withKey);
    this.#browsers.set(who.email, fresh);
    return fresh;
  }

  /** Walks the authorization request through the pages; returns the code and its PKCE verifier. */
  async code(who: Who, p: AuthorizeParams): Promise<{ code: string; verifier: string | undefined }> {
    const challenge = p.pkce === false ? undefined : await pkce();
    const url = this.authorizeUrl({
      client_id: p.clientId,
      redirect_uri: p.redirectUri,
      response_type: 'code',
      ...(p.scope ? { scope: p.scope } : {}),
      ...(p.resource ? { resource: p.resource } : {}),
      ...(challenge ? { code_challenge: challenge.challenge, code_challenge_method: 'S256' } : {}),
      ...p.extra,
    });
    const callback = await this.browser(who).authorize(url, who);
    const code = callback.searchParams.get('code');
    assert.ok(code, `no code in ${callback}`);
    assert.equal(callback.searchParams.get('iss'), this.auth.url);
    return { code, verifier: challenge?.verifier };
  }

  /** The token request for a code, with the static client's secret when it is the static client. */
  exchange(p: AuthorizeParams, code: string, verifier: string | undefined, extra: Record<string, string> = {}): Promise<Reply> {
    return this.token({
      grant_type: 'authorization_code',
      code,
      redirect_uri: p.redirectUri,
      ...clientAuth(p.clientId),
      ...(verifier ? { code_verifier: verifier } : {}),
      ...extra,
    });
  }

  /** Code flow end to end; returns the 200 token response body. */
  async tokens(who: Who, p: AuthorizeParams) {
    const { code, verifier } = await this.code(who, p);
    const r = await this.exchange(p, code, verifier, p.resource ? { resource: p.resource } : {});
    assert.equal(r.status, 200, r.text);
    return r.body as { access_token: string; refresh_token: string; scope: string; expires_in: number; token_type: string };
  }

  refresh(clientId: string, refreshToken: string, extra: Record<string, string> = {}): Promise<Reply> {
    return this.token({ grant_type: 'refresh_token', refresh_token: refreshToken, ...clientAuth(clientId), ...extra });
  }
}

/** The parameters of a well-formed authorization request with a fresh PKCE challenge. */
export async function authorizeParams(clientId: string, redirectUri: string): Promise<Record<string, string>> {
  return {
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    code_challenge: (await pkce()).challenge,
    code_challenge_method: 'S256',
  };
}

/** client_secret_post for the static client, client_id alone (method none) for the rest. */
export function clientAuth(clientId: string): Record<string, string> {
  return clientId === STATIC_CLIENT_ID ? { client_id: clientId, client_secret: STATIC_CLIENT_SECRET } : { client_id: clientId };
}

/** An RFC 6749 section 5.2 error: exactly {error, error_description}, never cached. */
export function assertOAuthError(r: Reply, status: number, error: string): void {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(r.body).sort(), ['error', 'error_description'], r.text);
  assert.equal(r.body.error, error, r.text);
  assert.equal(typeof r.body.error_description, 'string');
  assert.ok(r.body.error_description.length > 0);
  assert.equal(r.headers.get('cache-control'), 'no-store', `cache-control of ${r.text}`);
}

/** Our own error page: status, HTML, and no redirect anywhere. */
export function assertErrorPage(r: { status: number; headers: Headers }, status = 400): void {
  assert.equal(r.status, status);
  assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(r.headers.get('location'), null);
}

/** A local HTTP server for metadata documents that counts every request it receives. */
export async function startDocServer(handler: (req: IncomingMessage, res: ServerResponse, base: string) => void) {
  const seen: string[] = [];
  let base = '';
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    handler(req, res, base);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  return {
    port,
    base,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
