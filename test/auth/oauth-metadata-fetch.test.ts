import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { ClientMetadataResolver, METADATA_UNUSABLE } from '../../src/auth/oauth/client-metadata.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { escapeHtml } from '../../src/platform/html.ts';
import { freePort, type TestAuth } from '../helpers/auth.ts';
import { Browser, pkce, startOAuth } from '../helpers/oauth.ts';
import { assertErrorPage, assertOAuthError, RawOAuth, startDocServer, type Who } from '../helpers/oauth-raw.ts';

// Defects 5 and 8: metadata documents are fetched only when nothing cheaper can refuse the request,
// within a per-IP bucket and a process-wide cap, and every failure to use one reads the same.
// The rate limiter and the fetcher do not touch storage: SQLite alone covers them.

const REDIRECT = 'http://127.0.0.1/cb';

type DocServer = Awaited<ReturnType<typeof startDocServer>>;

/** A metadata document server; paths under /slow/ are held until `release()`; documents are never cached. */
async function docServer() {
  const held: (() => void)[] = [];
  const docs = await startDocServer((req, res, base) => {
    const body = JSON.stringify({ client_id: `${base}${req.url}`, client_name: 'Doc client', redirect_uris: [REDIRECT] });
    const send = () => res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body);
    if (req.url?.startsWith('/slow/')) held.push(send);
    else send();
  });
  return {
    docs,
    held,
    id: (path: string) => `${docs.base}${path}`,
    release: () => {
      for (const send of held.splice(0)) send();
    },
  };
}

const authorizeUrl = async (raw: RawOAuth, clientId: string) =>
  raw.authorizeUrl({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', code_challenge: (await pkce()).challenge, code_challenge_method: 'S256' });

/** Requests the doc server has seen since `start`. */
const since = (docs: DocServer, start: number) => docs.seen.slice(start);

describe('metadata-URL clients: refused before any fetch', () => {
  let auth: TestAuth;
  let raw: RawOAuth;
  let user: Who;
  let server: Awaited<ReturnType<typeof docServer>>;
  before(async () => {
    auth = await startOAuth('sqlite');
    raw = new RawOAuth(auth);
    user = await auth.verifiedAccount();
    server = await docServer();
  });
  after(async () => {
    server.release();
    await server.docs.close();
    await auth.close();
  });

  test('an unknown or foreign refresh token or code with a metadata-URL client_id causes no fetch', async () => {
    const clientId = server.id('/client');
    const start = server.docs.seen.length;
    // A real code and refresh token of another client, presented under the metadata URL.
    const otherClient = await raw.publicClient([REDIRECT]);
    const other = await raw.code(user, { clientId: otherClient, redirectUri: REDIRECT });
    const otherTokens = await raw.tokens(user, { clientId: otherClient, redirectUri: REDIRECT });

    assertOAuthError(await raw.refresh(clientId, 'ort_unknown'), 400, 'invalid_grant');
    assertOAuthError(await raw.refresh(clientId, otherTokens.refresh_token), 400, 'invalid_grant');
    assertOAuthError(await raw.token({ grant_type: 'authorization_code', code: 'oac_unknown', redirect_uri: REDIRECT, client_id: clientId }), 400, 'invalid_grant');
    assertOAuthError(await raw.token({ grant_type: 'authorization_code', code: other.code, redirect_uri: REDIRECT, client_id: clientId, code_verifier: other.verifier! }), 400, 'invalid_grant');
    assertOAuthError(await raw.token({ grant_type: 'password', client_id: clientId }), 400, 'unsupported_grant_type');
    // Revocation: an unknown or foreign token is nothing to revoke, answered 200 at once (RFC 7009 section 2.2).
    assert.equal((await raw.post('/oauth/revoke', { token: 'ort_unknown', client_id: clientId })).status, 200);
    assert.equal((await raw.post('/oauth/revoke', { token: otherTokens.access_token, client_id: clientId })).status, 200);
    assert.equal((await raw.userinfo(otherTokens.access_token)).status, 200, "another client's token is untouched");
    assert.deepEqual(since(server.docs, start), [], 'no document was fetched');
  });

  test('introspection by a public client is refused, with no fetch; its own token flow still fetches', async () => {
    const clientId = server.id('/introspector');
    const tokens = await raw.tokens(user, { clientId, redirectUri: REDIRECT });
    const start = server.docs.seen.length;
    assertOAuthError(await raw.post('/oauth/introspect', { token: tokens.access_token, client_id: clientId }), 401, 'invalid_client');
    assertOAuthError(await raw.post('/oauth/introspect', { token: tokens.access_token, client_id: await raw.publicClient([REDIRECT]) }), 401, 'invalid_client');
    assert.deepEqual(since(server.docs, start), [], 'no document was fetched');

    // Its real refresh token does reach the document (the client's current metadata is checked).
    const next = await raw.refresh(clientId, tokens.refresh_token);
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(since(server.docs, start), ['/introspector']);
  });

  test('RFC 7662: introspection answers token_type Bearer; token_kind tells access tokens from PATs', async () => {
    const tokens = await raw.tokens(user, { clientId: server.id('/kind'), redirectUri: REDIRECT });
    const intro = await raw.introspect(tokens.access_token);
    assert.equal(intro.body.active, true);
    assert.equal(intro.body.token_type, 'Bearer');
    assert.equal(intro.body.token_kind, 'access_token');
  });

  test(`at most 8 fetches at once: the next one fails at once with a clear error, at authorize and at the token endpoint`, async () => {
    const clientId = server.id('/busy-client');
    const tokens = await raw.tokens(user, { clientId, redirectUri: REDIRECT });
    const pending = [];
    for (let i = 0; i < 8; i++) pending.push(new Browser(false).request(await authorizeUrl(raw, server.id(`/slow/${i}`))));
    for (let waited = 0; server.held.length < 8 && waited < 5000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    assert.equal(server.held.length, 8, 'eight fetches are under way');
    const start = server.docs.seen.length;

    const page = await new Browser(false).request(await authorizeUrl(raw, server.id('/slow/8')));
    assertErrorPage(page, 503);
    assert.equal(page.headers.get('retry-after'), '1');
    assert.match(page.text, /Too many client metadata documents are being fetched/);
    const refused = await raw.refresh(clientId, tokens.refresh_token);
    assertOAuthError(refused, 503, 'temporarily_unavailable');
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.deepEqual(since(server.docs, start), [], 'nothing more was fetched');

    server.release();
    for (const r of await Promise.all(pending)) assert.equal(r.status, 302, 'the held fetches complete');
    assert.equal((await raw.refresh(clientId, tokens.refresh_token)).status, 200, 'capacity is back');
  });
});

describe('metadata fetch rate limit per IP: OAUTH_LIMIT_METADATA_FETCH=2/300', () => {
  let auth: TestAuth;
  let server: Awaited<ReturnType<typeof docServer>>;
  before(async () => {
    auth = await startOAuth('sqlite', { env: { OAUTH_LIMIT_METADATA_FETCH: '2/300' } });
    server = await docServer();
  });
  after(async () => {
    await server.docs.close();
    await auth.close();
  });

  test('past the bucket the token endpoint answers 429 slow_down with Retry-After, and fetches nothing', async () => {
    const raw = new RawOAuth(auth);
    const user = await auth.verifiedAccount();
    const clientId = server.id('/limited');
    const tokens = await raw.tokens(user, { clientId, redirectUri: REDIRECT }); // the code exchange: fetch 1
    const next = await raw.refresh(clientId, tokens.refresh_token); // fetch 2
    assert.equal(next.status, 200, next.text);
    const start = server.docs.seen.length;
    const r = await raw.refresh(clientId, next.body.refresh_token);
    assertOAuthError(r, 429, 'slow_down');
    const retry = Number(r.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 300, `Retry-After ${retry}`);
    assert.deepEqual(since(server.docs, start), []);
    assert.equal((await raw.userinfo(next.body.access_token)).status, 200);
  });
});

describe('one message for every metadata failure (no SSRF oracle)', () => {
  let secure: TestAuth;
  let insecure: TestAuth;
  before(async () => {
    secure = await startOAuth('sqlite', { env: { OAUTH_CLIENT_METADATA_ALLOW_INSECURE: 'false' } });
    insecure = await startOAuth('sqlite');
  });
  after(async () => {
    await secure.close();
    await insecure.close();
  });

  test('a forbidden address, a name that does not resolve and a closed port give byte-identical pages', async () => {
    const closed = await freePort();
    const cases: [TestAuth, string][] = [
      [secure, 'https://127.0.0.1/client'], // forbidden address
      [secure, 'https://10.0.0.1:8443/client'], // forbidden address, another port
      [secure, 'https://nowhere.invalid/client'], // does not resolve (RFC 6761 section 6.4)
      [insecure, 'http://nowhere.invalid/client'],
      [insecure, `http://127.0.0.1:${closed}/client`], // closed port
    ];
    const bodies: string[] = [];
    for (const [auth, clientId] of cases) {
      const page = await new Browser(false).request(await authorizeUrl(new RawOAuth(auth), clientId));
      assertErrorPage(page);
      bodies.push(page.text);
    }
    assert.ok(bodies[0]!.includes(escapeHtml(METADATA_UNUSABLE)), bodies[0]);
    for (const [i, body] of bodies.entries()) assert.equal(body, bodies[0], `${cases[i]![1]} reads differently`);
  });

  test('the token endpoint answers the same description when the document has become unreachable', async () => {
    const raw = new RawOAuth(insecure);
    const user = await insecure.verifiedAccount();
    const server = await docServer();
    const clientId = server.id('/vanishing');
    const tokens = await raw.tokens(user, { clientId, redirectUri: REDIRECT });
    await server.docs.close(); // the port is now closed
    const r = await raw.refresh(clientId, tokens.refresh_token);
    assertOAuthError(r, 401, 'invalid_client');
    assert.equal(r.body.error_description, METADATA_UNUSABLE);
  });
});

describe('the cause of a metadata failure goes to the log: its code and host, never the URL', () => {
  test('forbidden address (warn), unknown name and closed port (info)', async () => {
    const lines: { level: number; clientMetadata: { code: string; host: string } }[] = [];
    const log = pino({ level: 'info' }, new Writable({ write: (chunk, _enc, done) => done(void lines.push(JSON.parse(String(chunk)))) }));
    const closed = await freePort();
    const secure = new ClientMetadataResolver({ clock: systemClock, allowInsecure: false, log });
    const insecure = new ClientMetadataResolver({ clock: systemClock, allowInsecure: true, log });
    const cases: [ClientMetadataResolver, string, string, number][] = [
      [secure, 'https://10.1.2.3/private/doc?key=s3cret', 'forbidden_address', 40],
      [secure, 'https://nowhere.invalid/private/doc?key=s3cret', 'dns_failed', 30],
      [insecure, `http://127.0.0.1:${closed}/private/doc?key=s3cret`, 'connection_failed', 30],
    ];
    for (const [resolver, url, code, level] of cases) {
      await assert.rejects(resolver.resolve(url), (err: Error) => err.message === METADATA_UNUSABLE);
      const line = lines.at(-1)!;
      assert.equal(line.level, level, url);
      assert.deepEqual([line.clientMetadata.code, line.clientMetadata.host], [code, new URL(url).host]);
      assert.ok(!JSON.stringify(line).includes('/private/doc') && !JSON.stringify(line).includes('s3cret'), JSON.stringify(line));
    }
  });
});
