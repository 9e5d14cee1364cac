import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, startOAuth } from '../helpers/oauth.ts';
import { assertErrorPage, assertOAuthError, authorizeParams, RawOAuth, startDocServer } from '../helpers/oauth-raw.ts';

// RFC 9700 for the clients themselves: dynamic registration (RFC 7591) and
// metadata-URL clients (SSRF, OWASP SSRF Prevention Cheat Sheet).

for (const kind of DB_KINDS) {
  describe(`dynamic client registration (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    before(async () => {
      auth = await startOAuth(kind, { env: { OAUTH_LIMIT_REGISTRATION: '1000/3600' } });
      raw = new RawOAuth(auth);
    });
    after(() => auth.close());

    test('redirect URIs are refused by the same rules as at authorize', async () => {
      for (const [uris, appType] of [
        [['http://app.example/cb'], 'web'],
        [['http://192.168.1.10/cb'], 'native'],
        [['javascript:alert(1)'], 'web'],
        [['javascript:alert(1)'], 'native'],
        [['data:text/html,hi'], 'native'],
        [['https://app.example/cb#frag'], 'web'],
        [['https://app.example/cb#'], 'web'],
        [['https://user:pw@app.example/cb'], 'web'],
        [['com.example.app:/cb'], 'web'],
        [['myapp:/cb'], 'native'],
        [['/relative/cb'], 'web'],
        [['https://app.example/ok', 'http://app.example/bad'], 'web'],
      ] as const) {
        const r = await raw.register({ redirect_uris: uris, application_type: appType });
        assertOAuthError(r, 400, 'invalid_redirect_uri');
      }
      assertOAuthError(await raw.register({ redirect_uris: [] }), 400, 'invalid_redirect_uri');
      assertOAuthError(await raw.register({ client_name: 'no uris' }), 400, 'invalid_redirect_uri');
    });

    test('every URI that registers works at authorize, exactly as registered', async () => {
      for (const [uri, appType] of [
        ['https://app.example/cb', 'web'],
        ['https://app.example/cb?tenant=a', 'web'],
        ['http://127.0.0.1:8123/cb', 'web'],
        ['http://localhost/cb', 'native'],
        ['http://[::1]:9000/cb', 'native'],
        ['com.example.app:/oauth2redirect', 'native'],
      ] as const) {
        const r = await raw.register({ redirect_uris: [uri], application_type: appType });
        assert.equal(r.status, 201, `${uri}: ${r.text}`);
        assert.equal(r.headers.get('cache-control'), 'no-store');
        assert.deepEqual(r.body.redirect_uris, [uri]);
        assert.equal(r.body.application_type, appType);
        const page = await new Browser(false).request(raw.authorizeUrl(await authorizeParams(r.body.client_id, uri)));
        assert.equal(page.status, 302, `${uri}: ${page.text.slice(0, 200)}`);
        assert.equal(new URL(page.location!).pathname, '/oauth/login', uri);
      }
    });
  });
}

// The rate limiter and the metadata fetcher do not touch storage: SQLite alone covers them.
describe('registration rate limit per IP: OAUTH_LIMIT_REGISTRATION=2/3600', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startOAuth('sqlite', { env: { OAUTH_LIMIT_REGISTRATION: '2/3600' } });
  });
  after(() => auth.close());

  test('the third registration within the hour is 429 with Retry-After', async () => {
    const raw = new RawOAuth(auth);
    await raw.publicClient();
    assert.equal((await raw.register({ redirect_uris: ['http://bad.example/cb'] })).status, 400, 'a refused one counts too');
    const r = await raw.register({ redirect_uris: ['http://127.0.0.1/cb'] });
    assertOAuthError(r, 429, 'slow_down');
    const retry = Number(r.headers.get('retry-after'));
    assert.ok(retry > 3500 && retry <= 3600, `Retry-After ${retry}`);
  });
});

describe('authorization rate limit per IP: OAUTH_LIMIT_AUTHORIZE=3/300', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startOAuth('sqlite', { env: { OAUTH_LIMIT_AUTHORIZE: '3/300' } });
  });
  after(() => auth.close());

  test('past the bucket, /oauth/authorize shows a 429 page with Retry-After and stores nothing', async () => {
    const raw = new RawOAuth(auth);
    const url = raw.authorizeUrl({ client_id: 'product-web', redirect_uri: 'https://product.example/callback', response_type: 'code' });
    for (let i = 0; i < 3; i++) assert.equal((await new Browser(false).request(url)).status, 302);
    const pendingBefore = await auth.service.deps.db.selectFrom('oauth_requests').select('id').execute();
    const r = await new Browser(false).request(url);
    assert.equal(r.status, 429);
    assert.equal(r.location, null, 'no redirect');
    assert.match(r.headers.get('content-type')!, /text\/html/);
    assert.ok(Number(r.headers.get('retry-after')) > 0);
    const pendingAfter = await auth.service.deps.db.selectFrom('oauth_requests').select('id').execute();
    assert.equal(pendingAfter.length, pendingBefore.length);
  });
});

describe('metadata-URL clients without OAUTH_CLIENT_METADATA_ALLOW_INSECURE: SSRF', () => {
  let auth: TestAuth;
  let trap: Server;
  let port = 0;
  const connections: Socket[] = [];
  before(async () => {
    auth = await startOAuth('sqlite', { env: { OAUTH_CLIENT_METADATA_ALLOW_INSECURE: 'false' } });
    // A plain TCP listener on the loopback addresses: any connection at all is a failure.
    trap = createServer((socket) => {
      connections.push(socket);
      socket.destroy();
    });
    await new Promise<void>((resolve) => trap.listen(0, '::', resolve));
    port = (trap.address() as { port: number }).port;
  });
  after(async () => {
    await new Promise<void>((resolve) => trap.close(() => resolve()));
    await auth.close();
  });

  test('non-https, private, loopback, userinfo and fragment URLs get an error page and no request', async () => {
    const ids = [
      `http://127.0.0.1:${port}/x`,
      `https://127.0.0.1:${port}/x`,
      `https://[::1]:${port}/x`,
      `https://[::ffff:127.0.0.1]:${port}/x`,
      `https://localhost:${port}/x`,
      `https://2130706433:${port}/x`,
      `https://0x7f.1:${port}/x`,
      `https://0.0.0.0:${port}/x`,
      'https://10.0.0.1/x',
      'https://172.16.0.1/x',
      'https://192.168.0.1/x',
      'https://100.64.0.1/x',
      'https://169.254.169.254/latest',
      'https://[fd00::1]/x',
      'https://[fe80::1]/x',
      'https://[64:ff9b::a9fe:a9fe]/latest',
      'https://user:pw@example.com/x',
      'https://example.com/x#frag',
      'https://localhost/x',
    ];
    for (const clientId of ids) {
      const r = await new Browser(false).request(new RawOAuth(auth).authorizeUrl(await authorizeParams(clientId, 'http://127.0.0.1/cb')));
      assertErrorPage(r);
      assert.match(r.text, /metadata/, clientId);
    }
    assert.equal(connections.length, 0, 'the local server never received a connection');
  });
});

describe('metadata-URL clients with OAUTH_CLIENT_METADATA_ALLOW_INSECURE: unusable documents', () => {
  let auth: TestAuth;
  let docs: Awaited<ReturnType<typeof startDocServer>>;
  before(async () => {
    auth = await startOAuth('sqlite');
    docs = await startDocServer((req, res, base) => {
      const doc = (extra: Record<string, unknown> = {}) =>
        JSON.stringify({ client_id: `${base}${req.url}`, redirect_uris: ['http://127.0.0.1/cb'], ...extra });
      if (req.url === '/ok') return res.writeHead(200, { 'content-type': 'application/json' }).end(doc());
      if (req.url === '/redirect') return res.writeHead(302, { location: `${base}/ok` }).end();
      if (req.url === '/big') return res.writeHead(200, { 'content-type': 'application/json' }).end(doc({ client_name: 'x'.repeat(100 * 1024) }));
      if (req.url === '/big-chunked') {
        res.writeHead(200, { 'content-type': 'application/json' });
        for (let i = 0; i < 100; i++) res.write(i === 0 ? doc().slice(0, -1) : ' '.repeat(1024));
        return res.end('}');
      }
      if (req.url === '/html') return res.writeHead(200, { 'content-type': 'text/html' }).end(doc());
      if (req.url === '/other-id') return res.writeHead(200, { 'content-type': 'application/json' }).end(doc({ client_id: `${base}/ok` }));
      if (req.url === '/secret') return res.writeHead(200, { 'content-type': 'application/json' }).end(doc({ client_secret: 's' }));
      res.writeHead(404).end();
    });
  });
  after(async () => {
    await docs.close();
    await auth.close();
  });

  const authorize = async (path: string) =>
    new Browser(false).request(new RawOAuth(auth).authorizeUrl(await authorizeParams(`${docs.base}${path}`, 'http://127.0.0.1/cb')));

  test('a good document works (the baseline)', async () => {
    const r = await authorize('/ok');
    assert.equal(r.status, 302, r.text.slice(0, 300));
    assert.equal(new URL(r.location!).pathname, '/oauth/login');
  });

  test('a redirect, an oversized or non-JSON document, a foreign client_id or a secret: error page', async () => {
    for (const path of ['/redirect', '/big', '/big-chunked', '/html', '/other-id', '/secret', '/missing']) {
      const before = docs.seen.length;
      assertErrorPage(await authorize(path));
      assert.deepEqual(docs.seen.slice(before), [path], `${path}: fetched once, the redirect not followed`);
    }
  });
});
