import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestAuth, type TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, STATIC_CLIENT_ID, STATIC_CLIENT_SECRET, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { assertOAuthError, FORM, LOOPBACK_CB, RawOAuth, type Who } from '../helpers/oauth-raw.ts';

// The three deployments: OAuth off, OAuth behind the edge (X-Api-Key), OAuth public.

const PATHS: [method: string, path: string][] = [
  ['GET', '/.well-known/oauth-authorization-server'],
  ['GET', '/oauth/authorize'],
  ['POST', '/oauth/token'],
  ['POST', '/oauth/register'],
  ['POST', '/oauth/revoke'],
  ['POST', '/oauth/introspect'],
  ['GET', '/oauth/userinfo'],
  ['POST', '/oauth/userinfo'],
  ['GET', '/oauth/login'],
  ['POST', '/oauth/login'],
  ['GET', '/oauth/consent'],
  ['POST', '/oauth/consent'],
];
const CORS_PATHS = ['/.well-known/oauth-authorization-server', '/oauth/token', '/oauth/register', '/oauth/revoke'];

const corsHeaders = (headers: Headers) => [...headers.keys()].filter((k) => k.startsWith('access-control-'));
const send = (auth: TestAuth, method: string, path: string, key: boolean) =>
  auth.request(method, path, { key: key ? undefined : false, ...(method === 'POST' ? { rawBody: '', headers: { 'content-type': FORM } } : {}) });

/** A page's headers: never framed, never cached. */
function assertPageHeaders(r: { status: number; headers: Headers }, label: string) {
  assert.match(r.headers.get('content-type') ?? '', /^text\/html/, label);
  assert.match(r.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, label);
  assert.equal(r.headers.get('cache-control'), 'no-store', label);
}

/** Code flow, refresh, userinfo, introspection and revocation through raw requests; returns what the pages answered. */
async function walkThrough(raw: RawOAuth, user: Who) {
  const clientId = await raw.publicClient();
  const p = { clientId, redirectUri: LOOPBACK_CB };
  const tokens = await raw.tokens(user, p);
  const refreshed = await raw.refresh(clientId, tokens.refresh_token);
  assert.equal(refreshed.status, 200, refreshed.text);
  assert.equal((await raw.userinfo(refreshed.body.access_token)).status, 200);
  assert.equal((await raw.introspect(refreshed.body.access_token)).body.active, true);
  const revoked = await raw.post('/oauth/revoke', { token: refreshed.body.refresh_token, client_id: clientId });
  assert.equal(revoked.status, 200);
  assert.equal((await raw.userinfo(refreshed.body.access_token)).status, 401);

  // The pages, for their headers: a login page, a consent page and an error page.
  const browser = new Browser(raw.withKey);
  const start = await browser.request(raw.authorizeUrl({ client_id: STATIC_CLIENT_ID, redirect_uri: STATIC_REDIRECT, response_type: 'code' }));
  const login = await browser.request(start.location!);
  const signedIn = await browser.request(`${raw.auth.url}/oauth/login`, { form: { ...Browser.fields(login.text), ...user } });
  const consent = await browser.request(signedIn.location!);
  const error = await browser.request(raw.authorizeUrl({ client_id: 'nobody', redirect_uri: STATIC_REDIRECT, response_type: 'code' }));
  assert.deepEqual([start.status, login.status, consent.status, error.status], [302, 200, 200, 400]);
  return { start, login, consent, error };
}

for (const kind of DB_KINDS) {
  describe(`OAuth disabled: no OAUTH_* settings (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind);
    });
    after(() => auth.close());

    test('every OAuth path is 404, with the key or without', async () => {
      for (const [method, path] of PATHS) {
        for (const key of [true, false]) {
          const r = await send(auth, method, path, key);
          assert.equal(r.status, 404, `${method} ${path} key=${key}: ${r.status}`);
        }
      }
      assert.equal((await auth.request('OPTIONS', '/oauth/token', { key: false })).status, 404);
    });
  });

  describe(`OAuth behind the edge: OAUTH_PUBLIC_ENDPOINTS=false (${kind})`, () => {
    let auth: TestAuth;
    let user: Who;
    before(async () => {
      auth = await startOAuth(kind, { publicEndpoints: false });
      user = await auth.verifiedAccount();
    });
    after(() => auth.close());

    test('every OAuth path without X-Api-Key is 401 invalid_api_key', async () => {
      for (const [method, path] of PATHS) {
        const r = await send(auth, method, path, false);
        assert.equal(r.status, 401, `${method} ${path}`);
        assert.equal(r.body.code, 'invalid_api_key', `${method} ${path}`);
        assert.deepEqual(corsHeaders(r.headers), [], `${method} ${path}`);
      }
      const wrongKey = await auth.request('GET', '/.well-known/oauth-authorization-server', { key: 'wrong-key' });
      assert.equal(wrongKey.status, 401);
    });

    test('with the key everything works, and no CORS header is sent anywhere', async () => {
      const raw = new RawOAuth(auth, true);
      const discovery = await auth.request('GET', '/.well-known/oauth-authorization-server', { headers: { origin: 'https://app.example' } });
      assert.equal(discovery.status, 200);
      assert.equal(discovery.body.issuer, auth.url);
      const pages = await walkThrough(raw, user);
      for (const [label, r] of Object.entries(pages)) assert.deepEqual(corsHeaders(r.headers), [], label);
      for (const path of CORS_PATHS) {
        const preflight = await auth.request('OPTIONS', path, { headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
        assert.deepEqual(corsHeaders(preflight.headers), [], `OPTIONS ${path}`);
        const r = await send(auth, path.startsWith('/.well-known') ? 'GET' : 'POST', path, true);
        assert.deepEqual(corsHeaders(r.headers), [], path);
      }
    });

    test("the pages send CSP frame-ancestors 'none' and Cache-Control: no-store", async () => {
      const { start, login, consent, error } = await walkThrough(new RawOAuth(auth, true), user);
      assert.equal(start.headers.get('cache-control'), 'no-store');
      assertPageHeaders(login, 'login');
      assertPageHeaders(consent, 'consent');
      assertPageHeaders(error, 'error');
    });
  });

  describe(`OAuth public: OAUTH_PUBLIC_ENDPOINTS=true (${kind})`, () => {
    let auth: TestAuth;
    let user: Who;
    let raw: RawOAuth;
    before(async () => {
      auth = await startOAuth(kind, { publicEndpoints: true });
      user = await auth.verifiedAccount();
      raw = new RawOAuth(auth, false);
    });
    after(() => auth.close());

    test('every path works without the key; the pages are never framed or cached', async () => {
      const discovery = await auth.request('GET', '/.well-known/oauth-authorization-server', { key: false });
      assert.equal(discovery.status, 200);
      const { start, login, consent, error } = await walkThrough(raw, user);
      assert.equal(start.status, 302);
      assert.equal(start.headers.get('cache-control'), 'no-store');
      assertPageHeaders(login, 'login');
      assertPageHeaders(consent, 'consent');
      assertPageHeaders(error, 'error');
    });

    test('introspection without the key needs the confidential client', async () => {
      const tokens = await raw.tokens(user, { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB });
      const introspect = (fields: Record<string, string>) => raw.post('/oauth/introspect', { token: tokens.access_token, ...fields });
      assertOAuthError(await introspect({}), 401, 'invalid_client');
      const publicId = await raw.publicClient();
      assertOAuthError(await introspect({ client_id: publicId }), 401, 'invalid_client');
      assertOAuthError(await introspect({ client_id: publicId, client_secret: 'anything' }), 401, 'invalid_client');
      assertOAuthError(await introspect({ client_id: STATIC_CLIENT_ID, client_secret: 'wrong' }), 401, 'invalid_client');
      const ok = await introspect({ client_id: STATIC_CLIENT_ID, client_secret: STATIC_CLIENT_SECRET });
      assert.equal(ok.status, 200);
      assert.equal(ok.body.active, true);
      const withKey = await raw.introspect(tokens.access_token);
      assert.equal(withKey.body.active, true);
    });

    test('CORS: discovery, token, registration and revocation are open to any origin, nothing else is', async () => {
      const origin = { origin: 'https://app.example' };
      for (const path of CORS_PATHS) {
        const preflight = await auth.request('OPTIONS', path, {
          key: false,
          headers: { ...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
        });
        assert.equal(preflight.status, 204, path);
        assert.equal(preflight.headers.get('access-control-allow-origin'), '*', path);
        assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST|GET/, path);
        assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /content-type/, path);
        assert.equal(preflight.headers.get('access-control-allow-credentials'), null, path);
      }
      const live = await raw.tokens(user, { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB });
      const replies = {
        discovery: await auth.request('GET', '/.well-known/oauth-authorization-server', { key: false, headers: origin }),
        token: await raw.token({ grant_type: 'refresh_token', refresh_token: 'ort_x' }, origin),
        tokenOk: await raw.token({ grant_type: 'refresh_token', refresh_token: live.refresh_token, client_id: (await raw.introspect(live.access_token)).body.client_id }, origin),
        register: await raw.register({ redirect_uris: [LOOPBACK_CB] }, origin),
        revoke: await raw.post('/oauth/revoke', { token: 'ort_x', client_id: STATIC_CLIENT_ID, client_secret: STATIC_CLIENT_SECRET }, origin),
      };
      assert.equal(replies.tokenOk.status, 200, replies.tokenOk.text);
      for (const [label, r] of Object.entries(replies)) assert.equal(r.headers.get('access-control-allow-origin'), '*', label);

      const { start, login, consent, error } = await walkThrough(raw, user);
      for (const [label, r] of Object.entries({ start, login, consent, error })) assert.deepEqual(corsHeaders(r.headers), [], label);
      const preflight = await auth.request('OPTIONS', '/oauth/authorize', { key: false, headers: { ...origin, 'access-control-request-method': 'GET' } });
      assert.deepEqual(corsHeaders(preflight.headers), [], 'no preflight for the authorization endpoint');
    });
  });
}
