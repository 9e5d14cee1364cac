import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadAuthConfig } from '../../../src/auth/config.ts';
import { DEV_CONSOLE_CLIENT_ID, wireServices } from '../../../src/dev-wiring.ts';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import { CONSOLE_CSP } from '../../../src/gateway/console/layout.ts';
import { sha256 } from '../../../src/platform/crypto.ts';
import { ConfigError } from '../../../src/platform/config.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? assert.fail(`no CSRF field in ${html.slice(0, 300)}`);
const CLIENT_ID = 'gateway-console-test';
const CLIENT_SECRET = 'gateway-console-secret-0123456789abcdef';

/**
 * A stand-in for the account service's OAuth server, so that each check of
 * the callback can be met with the answer that tests it (an unverified
 * address, another issuer); the browser suite runs the real one.
 */
interface FakeAccounts {
  url: string;
  server: Server;
  /** What the next userinfo answers. */
  user: { email: string; verified: boolean };
  /** Metadata's issuer, when it should lie. */
  issuer: string | undefined;
  tokenRequests: { authorization: string; form: URLSearchParams }[];
  revoked: string[];
  usedCodes: Set<string>;
  /** How the token endpoint answers a refresh: rotate (ort_<n>), refuse (invalid_grant), or fail (503). */
  refresh: 'rotate' | 'refuse' | 'fail';
}

async function startFakeAccounts(): Promise<FakeAccounts> {
  const fake = { user: { email: '', verified: true }, issuer: undefined, tokenRequests: [], revoked: [], usedCodes: new Set<string>(), refresh: 'rotate' } as unknown as FakeAccounts;
  let rotations = 0;
  fake.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const form = new URLSearchParams(Buffer.concat(chunks).toString());
      const path = new URL(req.url ?? '/', fake.url).pathname;
      if (path === '/.well-known/oauth-authorization-server') {
        return json(200, {
          issuer: fake.issuer ?? fake.url,
          authorization_endpoint: `${fake.url}/oauth/authorize`,
          token_endpoint: `${fake.url}/oauth/token`,
          userinfo_endpoint: `${fake.url}/oauth/userinfo`,
          revocation_endpoint: `${fake.url}/oauth/revoke`,
          code_challenge_methods_supported: ['S256'],
          authorization_response_iss_parameter_supported: true,
        });
      }
      if (path === '/oauth/token') {
        fake.tokenRequests.push({ authorization: req.headers.authorization ?? '', form });
        if (form.get('grant_type') === 'refresh_token') {
          if (fake.refresh === 'fail') return json(503, { error: 'temporarily_unavailable' });
          if (fake.refresh === 'refuse') return json(400, { error: 'invalid_grant', error_description: 'revoked' });
          return json(200, { access_token: 'oat_r', token_type: 'Bearer', expires_in: 3600, refresh_token: `ort_r${++rotations}`, scope: 'identity' });
        }
        const code = form.get('code') ?? '';
        if (fake.usedCodes.has(code)) return json(400, { error: 'invalid_grant', error_description: 'used' });
        fake.usedCodes.add(code);
        return json(200, { access_token: `oat_${code}`, token_type: 'Bearer', expires_in: 3600, refresh_token: `ort_${code}`, scope: 'identity' });
      }
      if (path === '/oauth/userinfo') return json(200, { sub: 'user-1', email: fake.user.email, email_verified: fake.user.verified });
      if (path === '/oauth/revoke') {
        fake.revoked.push(form.get('token') ?? '');
        return void res.writeHead(200).end();
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
  return fake;
}

const accountsEnv = (fake: FakeAccounts, extra: Record<string, string> = {}) => ({
  GATEWAY_ACCOUNTS_URL: fake.url,
  GATEWAY_ACCOUNTS_CLIENT_ID: CLIENT_ID,
  GATEWAY_ACCOUNTS_CLIENT_SECRET: CLIENT_SECRET,
  ...extra,
});

/** A browser's cookie jar for app.inject: every Set-Cookie applied (an expired one removes its cookie). */
class Jar {
  readonly cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(setCookie: unknown): void {
    for (const c of ([] as string[]).concat((setCookie as string[] | string | undefined) ?? [])) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c) || /max-age=0\b/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
}

for (const kind of DB_KINDS) describe(`the console's "Sign in with your account" (a stand-in account service, ${kind})`, () => {
  let fake: FakeAccounts;
  let gw: TestGateway;
  before(async () => {
    fake = await startFakeAccounts();
    gw = await startTestGateway(kind, accountsEnv(fake));
  });
  after(async () => {
    await gw?.close();
    fake?.server.closeAllConnections();
    await new Promise<void>((resolve) => fake.server.close(() => resolve()));
  });

  /** Opens /sign-in, presses the button; returns the jar and the authorization request the browser was sent to. */
  async function start(g: TestGateway = gw, jar = new Jar()) {
    const page = await g.request('GET', '/sign-in', { headers: { cookie: jar.header() } });
    jar.take(page.headers['set-cookie']);
    const pressed = await g.request('POST', '/sign-in/account', { form: `csrf=${encodeURIComponent(csrfOf(page.text))}`, headers: { cookie: jar.header() } });
    assert.equal(pressed.status, 303, pressed.text);
    jar.take(pressed.headers['set-cookie']);
    return { jar, page, authorize: new URL(String(pressed.headers['location'])) };
  }
  async function callback(jar: Jar, params: Record<string, string>, g: TestGateway = gw) {
    const r = await g.request('GET', `/sign-in/account/callback?${new URLSearchParams(params)}`, { headers: { cookie: jar.header() } });
    jar.take(r.headers['set-cookie']);
    return r;
  }
  const tenantsOf = (g: TestGateway, email: string) => g.deps.db.selectFrom('tenants').selectAll().where('email', '=', email).execute();

  test('the button, its CSP, the authorization request (code, PKCE S256, state), then a session in a workspace created for the verified address', async () => {
    const { jar, page, authorize } = await start();
    assert.match(page.text, /<form method="post" action="\/sign-in\/account"><input type="hidden" name="csrf" value="[^"]+"><button type="submit" class="secondary">Sign in with your account<\/button><\/form>/);
    assert.equal(page.headers['content-security-policy'], CONSOLE_CSP.replace("form-action 'self'", `form-action 'self' ${fake.url}`));
    assert.equal(`${authorize.origin}${authorize.pathname}`, `${fake.url}/oauth/authorize`);
    const q = authorize.searchParams;
    assert.deepEqual(
      { response_type: q.get('response_type'), client_id: q.get('client_id'), redirect_uri: q.get('redirect_uri'), scope: q.get('scope'), method: q.get('code_challenge_method') },
      { response_type: 'code', client_id: CLIENT_ID, redirect_uri: 'http://gateway.test/sign-in/account/callback', scope: 'identity', method: 'S256' },
    );
    assert.match(q.get('state')!, /^[A-Za-z0-9_-]{43}$/);
    const cookie = jar.cookies.get('gw_console_oauth');
    assert.ok(cookie, 'the state is kept in the browser');
    assert.ok(!cookie.includes(q.get('state')!), 'sealed, not readable');

    const email = `fresh-${randomUUID()}@example.com`;
    fake.user = { email, verified: true };
    const done = await callback(jar, { code: 'code-1', state: q.get('state')!, iss: fake.url });
    assert.equal(done.status, 303, done.text);
    assert.equal(done.headers['location'], '/');
    assert.ok(jar.cookies.get('gw_console'), 'signed in');
    assert.equal(jar.cookies.get('gw_console_oauth'), undefined, 'the state cookie is gone');
    const exchange = fake.tokenRequests.at(-1)!;
    assert.equal(exchange.authorization, `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`);
    assert.equal(exchange.form.get('grant_type'), 'authorization_code');
    assert.equal(exchange.form.get('redirect_uri'), 'http://gateway.test/sign-in/account/callback');
    assert.equal(sha256(exchange.form.get('code_verifier')!), q.get('code_challenge'), 'the verifier of the challenge sent');
    assert.ok(!fake.revoked.includes('ort_code-1'), 'the grant is kept with the session');
    const kept = await gw.deps.db.selectFrom('gateway_sessions').select('accounts_grant').where('token_hash', '=', sha256(jar.cookies.get('gw_console')!)).executeTakeFirstOrThrow();
    assert.ok(kept.accounts_grant && !kept.accounts_grant.includes('ort_code-1'), 'sealed, not in plain text');
    const [tenant] = await tenantsOf(gw, email);
    assert.ok(tenant);
    const home = await gw.request('GET', '/', { headers: { cookie: jar.header() } });
    assert.equal(home.status, 200);
    assert.match(home.text, new RegExp(email.replace(/[.]/g, '\\.')));

    // Again: the same workspace.
    const again = await start();
    const second = await callback(again.jar, { code: 'code-2', state: again.authorize.searchParams.get('state')!, iss: fake.url });
    assert.equal(second.status, 303);
    assert.equal((await tenantsOf(gw, email)).length, 1);
  });

  test('a workspace whose address is confirmed is the one signed in to', async () => {
    const existing = await gw.signup();
    await gw.confirm(existing.email);
    fake.user = { email: existing.email.toUpperCase(), verified: true };
    const { jar, authorize } = await start();
    const r = await callback(jar, { code: `code-${randomUUID()}`, state: authorize.searchParams.get('state')!, iss: fake.url });
    assert.equal(r.status, 303);
    const rows = await tenantsOf(gw, existing.email);
    assert.deepEqual(rows.map((t) => t.id), [existing.tenantId]);
    const session = jar.cookies.get('gw_console')!;
    assert.equal((await gw.request('GET', '/api/v1/tenant/api-keys', { token: session })).status, 200);
    const keys = (await gw.request('GET', '/api/v1/tenant/api-keys', { token: session })).body.api_keys as { id: string }[];
    assert.deepEqual(keys.map((k) => k.id), [existing.apiKeyId], 'the session is in the existing workspace');
  });

  test('a tampered state, a callback replayed, one from another browser or after 10 minutes: refused, no session, no code exchanged', async () => {
    fake.user = { email: `tamper-${randomUUID()}@example.com`, verified: true };
    const before = fake.tokenRequests.length;
    const { jar, authorize } = await start();
    const state = authorize.searchParams.get('state')!;
    const tampered = await callback(jar, { code: 'tampered-code', state: `${state.slice(0, -1)}${state.endsWith('A') ? 'B' : 'A'}`, iss: fake.url });
    assert.equal(tampered.status, 400);
    assert.match(tampered.text, /This sign-in was already used, or was not started in this browser/);
    assert.equal(jar.cookies.get('gw_console'), undefined);
    // The state cookie was used up by that attempt: the right state now fails as well.
    assert.equal((await callback(jar, { code: 'tampered-code', state, iss: fake.url })).status, 400);

    const ok = await start();
    const params = { code: `code-${randomUUID()}`, state: ok.authorize.searchParams.get('state')!, iss: fake.url };
    const sealed = ok.jar.cookies.get('gw_console_oauth')!;
    assert.equal((await callback(ok.jar, params)).status, 303);
    const replay = await callback(ok.jar, params);
    assert.equal(replay.status, 400, 'replayed in the same browser');
    // Replayed with a copy of the state cookie: the code is single use at the account service.
    const copied = new Jar();
    copied.cookies.set('gw_console_oauth', sealed);
    const withCopy = await callback(copied, params);
    assert.equal(withCopy.status, 400);
    assert.match(withCopy.text, /already used or has expired/);
    assert.equal(copied.cookies.get('gw_console'), undefined);

    const foreign = await start();
    assert.equal((await callback(new Jar(), { code: 'x', state: foreign.authorize.searchParams.get('state')!, iss: fake.url })).status, 400, 'another browser');

    const late = await start();
    gw.clock.advance(10 * 60_000 + 1);
    const expired = await callback(late.jar, { code: 'late', state: late.authorize.searchParams.get('state')!, iss: fake.url });
    assert.equal(expired.status, 400);
    assert.match(expired.text, /longer than 10 minutes/);
    assert.equal(fake.tokenRequests.length, before + 2, 'only the good callback and the copied-cookie replay reached the token endpoint');
  });

  test('mix-up: another issuer, or no `iss` from a server that sends it, is refused before the code is used', async () => {
    const before = fake.tokenRequests.length;
    for (const iss of ['https://evil.example', undefined]) {
      const { jar, authorize } = await start();
      const r = await callback(jar, { code: 'mixed', state: authorize.searchParams.get('state')!, ...(iss ? { iss } : {}) });
      assert.equal(r.status, 400);
      assert.match(r.text, /did not come from this gateway’s account service/);
    }
    assert.equal(fake.tokenRequests.length, before);
  });

  test('denied consent and other errors from the account service: a page that says so', async () => {
    const denied = await start();
    const r = await callback(denied.jar, { error: 'access_denied', state: denied.authorize.searchParams.get('state')!, iss: fake.url });
    assert.equal(r.status, 403);
    assert.match(r.text, /<h1>You did not allow the sign-in<\/h1>/);
    const other = await start();
    const e = await callback(other.jar, { error: 'invalid_scope', error_description: '<b>x</b>', state: other.authorize.searchParams.get('state')!, iss: fake.url });
    assert.equal(e.status, 400);
    assert.match(e.text, /The account service answered: invalid_scope \(&lt;b&gt;x&lt;\/b&gt;\)/);
  });

  test('an address the account service has not verified is refused with a clear page, and no workspace is created', async () => {
    const email = `unverified-${randomUUID()}@example.com`;
    fake.user = { email, verified: false };
    const { jar, authorize } = await start();
    const r = await callback(jar, { code: `code-${randomUUID()}`, state: authorize.searchParams.get('state')!, iss: fake.url });
    assert.equal(r.status, 403);
    assert.match(r.text, /<h1>Verify your email address first<\/h1>/);
    assert.equal(jar.cookies.get('gw_console'), undefined);
    assert.deepEqual(await tenantsOf(gw, email), []);
  });

  test('the button posts only with the page\'s CSRF token', async () => {
    const page = await gw.request('GET', '/sign-in');
    const jar = new Jar();
    jar.take(page.headers['set-cookie']);
    assert.equal((await gw.request('POST', '/sign-in/account', { form: 'csrf=forged', headers: { cookie: jar.header() } })).status, 403);
    assert.equal((await gw.request('POST', '/sign-in/account', { form: `csrf=${csrfOf(page.text)}` })).status, 403, 'without the pre-session cookie');
  });

  test('GATEWAY_SIGNUP=closed: a new address is told to ask an operator; an existing workspace still signs in', async () => {
    const closed = await startTestGateway(kind, accountsEnv(fake, { GATEWAY_SIGNUP: 'closed' }));
    try {
      fake.user = { email: `stranger-${randomUUID()}@example.com`, verified: true };
      const s = await start(closed);
      const r = await callback(s.jar, { code: `code-${randomUUID()}`, state: s.authorize.searchParams.get('state')!, iss: fake.url }, closed);
      assert.equal(r.status, 403);
      assert.match(r.text, /<h1>No workspace for this address<\/h1>/);
      assert.match(r.text, /Ask an operator of this gateway to invite you/);
      assert.deepEqual(await tenantsOf(closed, fake.user.email), []);

      const invited = `invited-${randomUUID()}@example.com`;
      await closed.deps.db.insertInto('tenants').values({ id: randomUUID(), name: 'Invited', email: invited, store_bodies: 0, settings: '{}', created_at: Date.now(), email_confirmed_at: Date.now() }).execute();
      fake.user = { email: invited, verified: true };
      const t = await start(closed);
      assert.equal((await callback(t.jar, { code: `code-${randomUUID()}`, state: t.authorize.searchParams.get('state')!, iss: fake.url }, closed)).status, 303);
    } finally {
      await closed.close();
    }
  });

  /** A fresh verified address signed in through the button: the jar (with its console cookie) and the code used. */
  async function signedIn(email = `grant-${randomUUID()}@example.com`) {
    fake.user = { email, verified: true };
    const { jar, authorize } = await start();
    const code = `code-${randomUUID()}`;
    const r = await callback(jar, { code, state: authorize.searchParams.get('state')!, iss: fake.url });
    assert.equal(r.status, 303, r.text);
    return { jar, code, session: jar.cookies.get('gw_console')! };
  }
  const refreshes = () => fake.tokenRequests.filter((t) => t.form.get('grant_type') === 'refresh_token');
  const home = async (jar: Jar) => {
    const r = await gw.request('GET', '/', { headers: { cookie: jar.header() } });
    jar.take(r.headers['set-cookie']);
    return r;
  };

  test('A1: a workspace signed up through the API for the address (unconfirmed) is not handed over: the account gets its own, the other is released', async () => {
    const squatter = await gw.signup(undefined, 'Squatter');
    assert.equal((await gw.request('POST', '/api/v1/tenant/provider-keys', { token: squatter.session, body: { provider: 'openai', key: 'sk-squatter-key-SQAT' } })).status, 201);
    const { jar, session } = await signedIn(squatter.email);
    const mine = (await gw.request('GET', '/api/v1/tenant', { token: session })).body;
    assert.notEqual(mine.id, squatter.tenantId, "not the squatter's workspace");
    assert.deepEqual([mine.email, mine.email_status], [squatter.email, 'confirmed']);
    assert.deepEqual((await gw.request('GET', '/api/v1/tenant/provider-keys', { token: session })).body.provider_keys, []);
    assert.deepEqual((await gw.request('GET', '/api/v1/tenant/api-keys', { token: session })).body.api_keys, []);
    assert.doesNotMatch((await home(jar)).text, /Squatter/);
    // The squatter keeps their own workspace through the sign-up's session, without the address.
    assert.deepEqual(
      (({ id, email_status }) => [id, email_status])((await gw.request('GET', '/api/v1/tenant', { token: squatter.session })).body),
      [squatter.tenantId, 'released'],
    );
    assert.equal((await gw.mails(squatter.email, 'workspace_released')).length, 1, 'the owner is told');
    const again = await signedIn(squatter.email);
    assert.equal((await gw.request('GET', '/api/v1/tenant', { token: again.session })).body.id, mine.id, 'the next sign-in: the same workspace');
  });

  test('two first sign-ins of one address at once, an unconfirmed workspace holding it, end in one new workspace', async () => {
    const squatter = await gw.signup();
    fake.user = { email: squatter.email, verified: true };
    const a = await start();
    const b = await start();
    const replies = await Promise.all([a, b].map((s) => callback(s.jar, { code: `code-${randomUUID()}`, state: s.authorize.searchParams.get('state')!, iss: fake.url })));
    assert.deepEqual(replies.map((r) => r.status), [303, 303]);
    const ids = await Promise.all([a, b].map(async (s) => (await gw.request('GET', '/api/v1/tenant', { token: s.jar.cookies.get('gw_console')! })).body.id));
    assert.equal(ids[0], ids[1]);
    assert.deepEqual((await tenantsOf(gw, squatter.email)).map((t) => t.id), [ids[0]]);
  });

  test('the kept grant is refreshed at most every GATEWAY_ACCOUNTS_SESSION_CHECK_SECONDS (300) when the session is used; the rotated token replaces it', async () => {
    fake.refresh = 'rotate';
    const { jar, code } = await signedIn();
    const before = refreshes().length;
    gw.clock.advance(300_000 - 1);
    assert.equal((await home(jar)).status, 200);
    assert.equal(refreshes().length, before, 'not yet due');
    gw.clock.advance(1);
    assert.equal((await home(jar)).status, 200);
    assert.equal(refreshes().length, before + 1);
    const first = refreshes().at(-1)!;
    assert.equal(first.form.get('refresh_token'), `ort_${code}`);
    assert.equal(first.authorization, `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`);
    assert.equal((await home(jar)).status, 200);
    assert.equal(refreshes().length, before + 1, 'checked: not again within the interval');
    gw.clock.advance(300_000);
    assert.equal((await home(jar)).status, 200);
    assert.match(refreshes().at(-1)!.form.get('refresh_token')!, /^ort_r\d+$/, 'the rotated token is presented next');
    // Uses at once when a check is due: one refresh (a second would present a rotated token: a reuse, which revokes the grant).
    gw.clock.advance(300_000);
    const count = refreshes().length;
    const pages = await Promise.all(Array.from({ length: 5 }, () => gw.request('GET', '/', { headers: { cookie: jar.header() } })));
    assert.deepEqual(pages.map((p) => p.status), [200, 200, 200, 200, 200]);
    assert.equal(refreshes().length, count + 1, 'one check claimed for five uses');
  });

  test('a refused grant (the password was reset at the account service, or access revoked) ends the session at its next use, in the console and the API', async () => {
    fake.refresh = 'rotate';
    const browser = await signedIn();
    const api = await signedIn();
    fake.refresh = 'refuse';
    try {
      gw.clock.advance(300_000);
      const page = await home(browser.jar);
      assert.equal(page.status, 303);
      assert.equal(page.headers['location'], '/sign-in');
      assert.equal(browser.jar.cookies.get('gw_console'), undefined, 'the cookie is cleared');
      const r = await gw.request('GET', '/api/v1/tenant', { token: api.session });
      assert.deepEqual([r.status, r.body.code], [401, 'invalid_session']);
      assert.match(r.body.detail, /password was reset/);
      const rows = await gw.deps.db.selectFrom('gateway_sessions').select('token_hash').where('token_hash', 'in', [sha256(browser.session), sha256(api.session)]).execute();
      assert.deepEqual(rows, [], 'both sessions are deleted');
    } finally {
      fake.refresh = 'rotate';
    }
  });

  test('the account service unavailable: the session goes on, and a use 30 s later checks again', async () => {
    fake.refresh = 'rotate';
    const { jar } = await signedIn();
    const before = refreshes().length;
    fake.refresh = 'fail';
    try {
      gw.clock.advance(300_000);
      assert.equal((await home(jar)).status, 200, 'kept');
      assert.equal(refreshes().length, before + 1);
      gw.clock.advance(29_000);
      assert.equal((await home(jar)).status, 200);
      assert.equal(refreshes().length, before + 1, 'not hammered');
      fake.refresh = 'refuse';
      gw.clock.advance(1000);
      assert.equal((await home(jar)).status, 303, 'checked again, and refused this time');
    } finally {
      fake.refresh = 'rotate';
    }
  });

  test('signing out revokes the kept grant at the account service', async () => {
    fake.refresh = 'rotate';
    const { jar, code } = await signedIn();
    const page = await home(jar);
    const out = await gw.request('POST', '/sign-out', { form: `csrf=${encodeURIComponent(csrfOf(page.text))}`, headers: { cookie: jar.header() } });
    assert.equal(out.status, 303);
    await gw.deps.background.settled();
    assert.ok(fake.revoked.includes(`ort_${code}`));
  });

  test('a server whose metadata names another issuer is not used', async () => {
    const liar = await startFakeAccounts();
    liar.issuer = 'https://accounts.example';
    const g = await startTestGateway('sqlite', accountsEnv(liar));
    try {
      const page = await g.request('GET', '/sign-in');
      const r = await g.request('POST', '/sign-in/account', { form: `csrf=${csrfOf(page.text)}`, headers: { cookie: String(page.headers['set-cookie']).split(';')[0]! } });
      assert.equal(r.status, 502);
      assert.match(r.text, /The account service could not be reached/);
    } finally {
      await g.close();
      liar.server.closeAllConnections();
      await new Promise<void>((resolve) => liar.server.close(() => resolve()));
    }
  });
});

describe('GATEWAY_ACCOUNTS_* and the npm start wiring', () => {
  const base = { DATA_DIR: '/tmp/unused-account-sign-in', GATEWAY_ENCRYPTION_KEY: 'a'.repeat(64) };
  const problems = (env: Record<string, string>) => {
    try {
      loadGatewayConfig({ ...base, ...env });
      return [];
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.problems;
    }
  };

  test('all three or none; a partial set names what is missing; production wants https and a long secret', () => {
    assert.equal(loadGatewayConfig(base).accounts, undefined);
    assert.deepEqual(problems({ GATEWAY_ACCOUNTS_URL: 'https://accounts.example' }), [
      'GATEWAY_ACCOUNTS_CLIENT_ID and GATEWAY_ACCOUNTS_CLIENT_SECRET must be set with GATEWAY_ACCOUNTS_URL: the console\'s "Sign in with your account" needs all of GATEWAY_ACCOUNTS_URL, GATEWAY_ACCOUNTS_CLIENT_ID and GATEWAY_ACCOUNTS_CLIENT_SECRET (none turns it off)',
    ]);
    assert.match(problems({ GATEWAY_ACCOUNTS_CLIENT_ID: 'x', GATEWAY_ACCOUNTS_CLIENT_SECRET: 'y' })[0]!, /^GATEWAY_ACCOUNTS_URL must be set with/);
    const config = loadGatewayConfig({ ...base, GATEWAY_BASE_URL: 'https://gw.example/', GATEWAY_ACCOUNTS_URL: 'https://accounts.example/', GATEWAY_ACCOUNTS_CLIENT_ID: 'c', GATEWAY_ACCOUNTS_CLIENT_SECRET: 's' });
    assert.deepEqual(config.accounts, { issuer: 'https://accounts.example', clientId: 'c', clientSecret: 's', redirectUri: 'https://gw.example/sign-in/account/callback' });
    const production = { NODE_ENV: 'production', SMTP_HOST: 'smtp.example', GATEWAY_BASE_URL: 'https://gw.example' };
    assert.deepEqual(problems({ ...production, GATEWAY_ACCOUNTS_URL: 'http://accounts.example', GATEWAY_ACCOUNTS_CLIENT_ID: 'c', GATEWAY_ACCOUNTS_CLIENT_SECRET: 'short' }), [
      'GATEWAY_ACCOUNTS_URL must be https when NODE_ENV=production',
      'GATEWAY_ACCOUNTS_CLIENT_SECRET must be at least 32 characters when NODE_ENV=production',
    ]);
    assert.match(problems({ ...production, GATEWAY_ACCOUNTS_CLIENT_ID: 'c' })[0]!, /GATEWAY_ACCOUNTS_URL and GATEWAY_ACCOUNTS_CLIENT_SECRET must be set with GATEWAY_ACCOUNTS_CLIENT_ID/);
  });

  test('development: both services are given one client; any variable of the operator, or production, leaves the environment alone', async () => {
    const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'wiring-'));
    try {
      const { env, wired } = wireServices({ DATA_DIR: dir, AUTH_PORT: '9100', GATEWAY_PORT: '9101' });
      assert.equal(wired, true);
      const secret = (JSON.parse(readFileSync(join(dir, 'dev-secrets.json'), 'utf8')) as Record<string, string>)['GATEWAY_ACCOUNTS_CLIENT_SECRET'];
      assert.ok(secret && secret.length >= 43);
      const auth = loadAuthConfig(env);
      const gateway = loadGatewayConfig(env);
      assert.deepEqual(
        { id: auth.oauth?.clientId, secret: auth.oauth?.clientSecret, redirects: auth.oauth?.redirectUris, public: auth.oauth?.publicEndpoints },
        { id: DEV_CONSOLE_CLIENT_ID, secret, redirects: ['http://localhost:9101/sign-in/account/callback'], public: true },
      );
      assert.deepEqual(gateway.accounts, { issuer: 'http://localhost:9100', clientId: DEV_CONSOLE_CLIENT_ID, clientSecret: secret, redirectUri: 'http://localhost:9101/sign-in/account/callback' });
      assert.equal(wireServices({ DATA_DIR: dir }).env['OAUTH_CLIENT_SECRET'], secret, 'generated once, kept');
      for (const name of ['OAUTH_CLIENT_ID', 'GATEWAY_ACCOUNTS_URL', 'OAUTH_CLIENT_REDIRECT_URIS']) {
        const mine = { DATA_DIR: dir, [name]: 'mine' };
        assert.deepEqual(wireServices(mine), { env: mine, wired: false }, name);
      }
      const production = { DATA_DIR: dir, NODE_ENV: 'production' };
      assert.deepEqual(wireServices(production), { env: production, wired: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
