import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { sha256 } from '../../../src/platform/crypto.ts';
import { createHttpApp } from '../../../src/platform/http.ts';
import { registerConsole } from '../../../src/gateway/console/console.ts';
import { consoleCookies, startConsoleSession } from '../../../src/gateway/console/console-session.ts';
import { CONSOLE_CSP } from '../../../src/gateway/console/layout.ts';
import { createFakeProvider } from '../../../tools/fake-provider/server.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

/** The form's CSRF token on a page (every form of a page carries the same one). */
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? assert.fail(`no CSRF field in ${html.slice(0, 200)}`);

interface Who {
  tenantId: string;
  session: string;
  cookie: string;
  csrf: string;
}

/**
 * The console through app.inject (the control plane's real app): sessions,
 * CSRF, headers, the asset allow-list, and the forms' effects read back
 * through the API. The browser suite (console-browser.test.ts) drives the
 * same pages in Chromium.
 */
for (const kind of DB_KINDS) {
  describe(`console (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind);
    });
    after(() => gw.close());

    async function signedIn(): Promise<Who> {
      const s = await gw.signup();
      const cookie = `gw_console=${s.session}`;
      const page = await gw.request('GET', '/api-keys', { headers: { cookie } });
      assert.equal(page.status, 200);
      return { tenantId: s.tenantId, session: s.session, cookie, csrf: csrfOf(page.text) };
    }
    const post = (who: Pick<Who, 'cookie'>, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
      gw.request('POST', path, { form: new URLSearchParams(fields).toString(), headers: { cookie: who.cookie, ...headers } });
    const apiKeys = async (who: Who) => (await gw.request('GET', '/api/v1/tenant/api-keys', { token: who.session })).body.api_keys as { id: string; name: string; limits: object }[];

    test('without a live session every page redirects to /sign-in, and a POST changes nothing', async () => {
      const who = await signedIn();
      for (const path of ['/', '/api-keys', '/provider-keys']) {
        const r = await gw.request('GET', path);
        assert.equal(r.status, 303, path);
        assert.equal(r.headers['location'], '/sign-in');
      }
      const anonymous = await post({ cookie: '' }, '/api-keys', { csrf: who.csrf, name: 'sneaky' });
      assert.equal(anonymous.status, 303);
      assert.equal(anonymous.headers['location'], '/sign-in');
      assert.deepEqual((await apiKeys(who)).map((k) => k.name), ['default']);
      // A session that ended (or a cookie that is no session) is no session: redirected, and the dead cookie cleared.
      await gw.request('POST', '/api/v1/auth/logout', { token: who.session });
      const ended = await gw.request('GET', '/api-keys', { headers: { cookie: who.cookie } });
      assert.equal(ended.status, 303);
      assert.match(String(ended.headers['set-cookie']), /^gw_console=;/);
      assert.equal((await post(who, '/api-keys', { csrf: who.csrf, name: 'sneaky' })).status, 303);
      const apiKeyAsCookie = await gw.request('GET', '/', { headers: { cookie: `gw_console=sk-gw-${'A'.repeat(43)}` } });
      assert.equal(apiKeyAsCookie.status, 303);
    });

    test('every page has the strict CSP, no-store and no framing, and no inline script, handler or style', async () => {
      const who = await signedIn();
      const pages = ['/', '/api-keys', '/provider-keys'];
      const anonymousPages = ['/sign-in', '/auth/magic-link?token=gwm_x'];
      for (const [path, cookie] of [...pages.map((p) => [p, who.cookie]), ...anonymousPages.map((p) => [p, ''])] as [string, string][]) {
        const r = await gw.request('GET', path, { headers: { cookie } });
        assert.equal(r.status, 200, path);
        assert.equal(r.headers['content-security-policy'], CONSOLE_CSP, path);
        assert.equal(
          CONSOLE_CSP,
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        );
        assert.equal(r.headers['cache-control'], 'no-store', path);
        assert.equal(r.headers['x-frame-options'], 'DENY', path);
        assert.equal(r.headers['x-content-type-options'], 'nosniff', path);
        for (const script of r.text.match(/<script\b[^>]*>/g) ?? []) {
          // Chart data blocks are never run; every other script is a file.
          if (/\btype="application\/json"/.test(script)) continue;
          assert.match(script, /\bsrc="\/assets\//, `${path}: ${script}`);
        }
        assert.doesNotMatch(r.text, /<style\b|\sstyle=|\son[a-z]+=/i, path);
      }
      // The created-key page too (it is answered to a POST, never reached by a GET).
      const created = await post(who, '/api-keys', { csrf: who.csrf, name: 'headers' });
      assert.equal(created.headers['content-security-policy'], CONSOLE_CSP);
      assert.equal(created.headers['cache-control'], 'no-store');
    });

    test('CSRF: a POST needs the token of its own session, from a same-origin page', async () => {
      const a = await signedIn();
      const b = await signedIn();
      const create = (fields: Record<string, string>, headers: Record<string, string> = {}) => post(a, '/api-keys', { name: 'csrf-test', ...fields }, headers);
      const refusals: [string, Awaited<ReturnType<typeof create>>][] = [
        ['no token', await create({})],
        ['an empty token', await create({ csrf: '' })],
        ["another session's token", await create({ csrf: b.csrf })],
        ['a token with a character changed', await create({ csrf: `${a.csrf.slice(0, -1)}${a.csrf.endsWith('A') ? 'B' : 'A'}` })],
        ['Sec-Fetch-Site: cross-site', await create({ csrf: a.csrf }, { 'sec-fetch-site': 'cross-site' })],
        ['Sec-Fetch-Site: same-site (a sibling subdomain)', await create({ csrf: a.csrf }, { 'sec-fetch-site': 'same-site' })],
        ['a foreign Origin', await create({ csrf: a.csrf }, { origin: 'https://evil.example' })],
        ['Origin: null', await create({ csrf: a.csrf }, { origin: 'null' })],
      ];
      for (const [what, r] of refusals) {
        assert.equal(r.status, 403, what);
        assert.match(r.text, /<h1>This form was refused<\/h1>/, what);
        assert.match(r.text, /role="alert"/, what);
        assert.equal(r.headers['content-security-policy'], CONSOLE_CSP, what);
      }
      assert.deepEqual(
        (await apiKeys(a)).map((k) => k.name),
        ['default'],
        'nothing was created',
      );
      // JSON is no way around the form: the console takes forms only.
      const json = await gw.request('POST', '/api-keys', { body: { csrf: a.csrf, name: 'json' }, headers: { cookie: a.cookie } });
      assert.equal(json.status, 415);
      // Accepted: the token, from the gateway's own origin (GATEWAY_BASE_URL's, or the one the request was addressed to).
      const accepted: Record<string, string>[] = [{}, { origin: 'http://gateway.test', 'sec-fetch-site': 'same-origin' }, { origin: 'http://localhost:80' }];
      for (const headers of accepted) {
        const ok = await create({ csrf: a.csrf }, headers);
        assert.equal(ok.status, 201, JSON.stringify(headers));
      }
      assert.equal((await apiKeys(a)).length, 4);
      // Signing out is a POST like any other.
      assert.equal((await post(a, '/sign-out', {})).status, 403);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: a.session })).status, 200, 'still signed in');
    });

    test('sign-out ends the session server-side and clears the cookie', async () => {
      const who = await signedIn();
      const out = await post(who, '/sign-out', { csrf: who.csrf });
      assert.equal(out.status, 303);
      assert.equal(out.headers['location'], '/sign-in?signed_out=1');
      assert.match(String(out.headers['set-cookie']), /^gw_console=;.*Path=\//);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: who.session })).status, 401);
      const page = await gw.request('GET', '/sign-in?signed_out=1');
      assert.match(page.text, /role="status">You are signed out/);
    });

    test('sign-in by magic link: the cookie is HttpOnly and SameSite=Lax, the new session replaces the old one', async () => {
      const { email, tenantId, session: old } = await gw.signup();
      await gw.confirm(email);
      const form = await gw.request('GET', '/sign-in');
      const pre = String(form.headers['set-cookie']);
      assert.match(pre, /^gw_console_pre=pre_[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
      const preCookie = pre.split(';')[0]!;
      const invalid = await gw.request('POST', '/sign-in', { form: `csrf=${csrfOf(form.text)}&email=not-an-address`, headers: { cookie: preCookie } });
      assert.equal(invalid.status, 400);
      assert.match(invalid.text, /<input type="email" id="email" name="email" value="not-an-address"[^>]*aria-describedby="email-hint email-error" aria-invalid="true"/);
      assert.match(invalid.text, /<p class="field-error" id="email-error" role="alert">The email address is not valid.<\/p>/);
      const asked = await gw.request('POST', '/sign-in', { form: `csrf=${csrfOf(form.text)}&email=${encodeURIComponent(email)}`, headers: { cookie: preCookie } });
      assert.equal(asked.status, 200);
      assert.match(asked.text, /<h1>Check your email<\/h1>/);
      const stranger = await gw.request('POST', '/sign-in', { form: `csrf=${csrfOf(form.text)}&email=nobody@example.com`, headers: { cookie: preCookie } });
      assert.equal(stranger.text.replace('nobody@example.com', email), asked.text, 'the same page whether or not the address has a workspace');
      const token = new URL(/https?:\/\/\S+/.exec((await gw.mails(email, 'magic_link')).at(-1)!.text)![0]).searchParams.get('token')!;
      const landing = await gw.request('GET', `/auth/magic-link?token=${token}`, { headers: { cookie: `${preCookie}; gw_console=${old}` } });
      const signed = await gw.request('POST', '/auth/magic-link', {
        form: `csrf=${csrfOf(landing.text)}&token=${token}&open=console`,
        headers: { cookie: `${preCookie}; gw_console=${old}` },
      });
      assert.equal(signed.status, 303);
      assert.equal(signed.headers['location'], '/');
      const cookies = ([] as string[]).concat(signed.headers['set-cookie'] as string[]);
      const session = cookies.find((c) => c.startsWith('gw_console='))!;
      assert.match(session, /^gw_console=gws_[A-Za-z0-9_-]{43}; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
      assert.ok(cookies.some((c) => c.startsWith('gw_console_pre=;')), 'the pre-session cookie is cleared');
      const fresh = session.split(';')[0]!.slice('gw_console='.length);
      assert.notEqual(fresh, old);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: fresh })).body.id, tenantId);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: old })).status, 401, "the browser's previous session was ended");
      const home = await gw.request('GET', '/', { headers: { cookie: `gw_console=${fresh}` } });
      assert.match(home.text, /<h1>Overview<\/h1>/);
      // Login CSRF: a link posted from elsewhere, or without the pre-session cookie, signs no one in.
      assert.equal((await gw.request('POST', '/sign-in', { form: `email=${encodeURIComponent(email)}`, headers: { cookie: preCookie } })).status, 403);
      assert.equal((await gw.request('POST', '/auth/magic-link', { form: `csrf=${csrfOf(landing.text)}&token=${token}&open=console` })).status, 403);
      assert.equal((await gw.request('POST', '/auth/magic-link', { form: `csrf=${csrfOf(landing.text)}&token=${token}&open=console`, headers: { cookie: preCookie, 'sec-fetch-site': 'cross-site' } })).status, 403);
    });

    test('production cookies: Secure, with the __Host- prefix', () => {
      const prod = consoleCookies(true);
      assert.deepEqual([prod.session, prod.preSession], ['__Host-gw_console', '__Host-gw_console_pre']);
      assert.deepEqual(prod.options, { path: '/', httpOnly: true, sameSite: 'lax', secure: true });
      assert.deepEqual(consoleCookies(false).options.secure, false);
    });

    test('API keys: created with limits (shown once), limits changed and cleared, revoked; the API sees the same keys', async () => {
      const who = await signedIn();
      const created = await post(who, '/api-keys', { csrf: who.csrf, name: '  ci  ', requests_per_minute: '60', tokens_per_day: '', usd_per_month: '2.5' });
      assert.equal(created.status, 201);
      const key = /id="new-key"[^>]*value="(sk-gw-[A-Za-z0-9_-]{43})"/.exec(created.text)?.[1] ?? assert.fail('the key is shown');
      assert.match(created.text, /<button type="button" class="copy" data-copy="new-key"[^>]*hidden>Copy<\/button>/);
      const listed = (await apiKeys(who)).find((k) => k.name === 'ci')!;
      assert.deepEqual(listed.limits, { requests_per_minute: 60, usd_per_month: 2.5 });
      const row = await gw.deps.db.selectFrom('api_keys').select('key_hash').where('id', '=', listed.id).executeTakeFirstOrThrow();
      assert.equal(row.key_hash, sha256(key));
      const list = await gw.request('GET', '/api-keys', { headers: { cookie: who.cookie } });
      assert.ok(!list.text.includes(key), 'the key is never shown again');
      assert.match(list.text, /Requests per minute: 60/);

      // Refusals are next to their field, announced, and change nothing.
      const bad = await post(who, `/api-keys/${listed.id}/limits`, { csrf: who.csrf, requests_per_minute: '1.5', tokens_per_day: 'lots', usd_per_month: '-1' });
      assert.equal(bad.status, 400);
      for (const name of ['requests_per_minute', 'tokens_per_day', 'usd_per_month']) {
        assert.match(bad.text, new RegExp(`id="key-${listed.id}-${name}-error" role="alert">`), name);
      }
      assert.match(bad.text, /Requests per minute must be a whole number from 1 to 1,000,000, or empty for no limit./);
      assert.match(bad.text, /<details open>/);
      assert.deepEqual((await apiKeys(who)).find((k) => k.id === listed.id)!.limits, { requests_per_minute: 60, usd_per_month: 2.5 });
      const noName = await post(who, '/api-keys', { csrf: who.csrf, name: '   ' });
      assert.equal(noName.status, 400);
      assert.match(noName.text, /id="create-name-error" role="alert">The key name must not be empty.</);

      const revokedBefore = gw.revoked.length;
      const changed = await post(who, `/api-keys/${listed.id}/limits`, { csrf: who.csrf, requests_per_minute: '', tokens_per_day: '1,000', usd_per_month: '' });
      assert.equal(changed.status, 303);
      assert.equal(changed.headers['location'], `/api-keys?notice=limits-saved#key-${listed.id}`);
      assert.deepEqual((await apiKeys(who)).find((k) => k.id === listed.id)!.limits, { tokens_per_day: 1000 });
      assert.equal(gw.revoked.length, revokedBefore + 1, "every replica's key cache is told");
      await post(who, `/api-keys/${listed.id}/limits`, { csrf: who.csrf });
      assert.deepEqual((await apiKeys(who)).find((k) => k.id === listed.id)!.limits, {});

      const revoked = await post(who, `/api-keys/${listed.id}/revoke`, { csrf: who.csrf });
      assert.equal(revoked.status, 303);
      assert.equal(revoked.headers['location'], '/api-keys?notice=revoked');
      assert.ok(!(await apiKeys(who)).some((k) => k.id === listed.id));
      assert.equal(gw.revoked.at(-1), sha256(key));
    });

    test("another workspace's keys: not listed, and its ids are 404 to every form", async () => {
      const a = await signedIn();
      const b = await signedIn();
      await post(a, '/api-keys', { csrf: a.csrf, name: 'secret-project-a' });
      const aKey = (await apiKeys(a)).find((k) => k.name === 'secret-project-a')!;
      await gw.request('POST', '/api/v1/tenant/provider-keys', { token: a.session, body: { provider: 'openai', key: 'sk-a-secret-QRST' } });
      const bKeys = await gw.request('GET', '/api-keys', { headers: { cookie: b.cookie } });
      const bProviders = await gw.request('GET', '/provider-keys', { headers: { cookie: b.cookie } });
      for (const text of [bKeys.text, bProviders.text]) {
        assert.ok(!text.includes('secret-project-a') && !text.includes(aKey.id) && !text.includes('QRST'));
      }
      for (const path of [`/api-keys/${aKey.id}/revoke`, `/api-keys/${aKey.id}/limits`]) {
        const r = await post(b, path, { csrf: b.csrf, requests_per_minute: '1' });
        assert.equal(r.status, 404, path);
        assert.match(r.text, /role="alert">No API key with this id belongs to this tenant./);
      }
      const test = await post(b, '/provider-keys/openai/test', { csrf: b.csrf });
      assert.equal(test.status, 404);
      assert.deepEqual((await apiKeys(a)).find((k) => k.id === aKey.id)!.limits, {}, "A's key is untouched");
      assert.ok((await apiKeys(a)).some((k) => k.id === aKey.id));
    });

    test('provider keys: stored through putProviderKey (refusals next to their field), replaced, deleted; the key never comes back', async () => {
      const who = await signedIn();
      const refused = await post(who, '/provider-keys', { csrf: who.csrf, form: 'add', provider: 'openai-compatible', key: 'sk-compatible-0001', base_url: '' });
      assert.equal(refused.status, 400);
      assert.match(refused.text, /id="add-base-url-error" role="alert">The OpenAI-compatible server provider needs a base_url/);
      assert.match(refused.text, /<option value="openai-compatible" selected>/);
      assert.ok(!refused.text.includes('sk-compatible-0001'), 'a refused key is not echoed');
      const privateUrl = await post(who, '/provider-keys', { csrf: who.csrf, form: 'add', provider: 'openai', key: 'sk-openai-0001', base_url: 'http://127.0.0.1:9/v1' });
      assert.equal(privateUrl.status, 400);
      assert.match(privateUrl.text, /id="add-base-url-error" role="alert">base_url refused/);
      const short = await post(who, '/provider-keys', { csrf: who.csrf, form: 'add', provider: 'openai', key: 'short' });
      assert.match(short.text, /id="add-key-error" role="alert">The provider key must be at least 8 characters./);

      const added = await post(who, '/provider-keys', { csrf: who.csrf, form: 'add', provider: 'openai', key: 'sk-openai-secret-ABCD' });
      assert.equal(added.status, 303);
      assert.equal(added.headers['location'], '/provider-keys?notice=saved#provider-openai');
      const page = await gw.request('GET', '/provider-keys', { headers: { cookie: who.cookie } });
      assert.match(page.text, /<code>…ABCD<\/code>/);
      assert.match(page.text, /default \(<code class="wrap">https:\/\/api.openai.com\/v1<\/code>\)/);
      assert.ok(!page.text.includes('sk-openai-secret'));
      assert.equal(gw.providerChanges.at(-1), who.tenantId, "the data plane's tenant cache is told");

      await post(who, '/provider-keys', { csrf: who.csrf, form: 'replace', provider: 'openai', key: 'sk-openai-secret-WXYZ', base_url: '' });
      const api = await gw.request('GET', '/api/v1/tenant/provider-keys', { token: who.session });
      assert.deepEqual(
        api.body.provider_keys.map((k: { provider: string; key_last4: string }) => [k.provider, k.key_last4]),
        [['openai', 'WXYZ']],
      );
      const badReplace = await post(who, '/provider-keys', { csrf: who.csrf, form: 'replace', provider: 'openai', key: 'x' });
      assert.match(badReplace.text, /id="replace-openai-key-error" role="alert">/);
      assert.match(badReplace.text, /<details open>\s*<summary>Replace the OpenAI key/);

      const deleted = await post(who, '/provider-keys/openai/delete', { csrf: who.csrf });
      assert.equal(deleted.status, 303);
      assert.deepEqual((await gw.request('GET', '/api/v1/tenant/provider-keys', { token: who.session })).body.provider_keys, []);
      assert.equal((await post(who, '/provider-keys/nonsense/delete', { csrf: who.csrf })).status, 404);
    });

    test("the test button: Anthropic's model list with its own headers; a provider that cannot be reached, as the data plane names it", async () => {
      const gw2 = await startTestGateway(kind, { GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1' });
      const fake = await createFakeProvider({ apiKey: 'sk-ant-right-0000' });
      try {
        const s = await gw2.signup();
        const cookie = `gw_console=${s.session}`;
        const store = (body: object) => gw2.request('POST', '/api/v1/tenant/provider-keys', { token: s.session, body });
        await store({ provider: 'anthropic', key: 'sk-ant-right-0000', base_url: `${fake.url}/v1` });
        await store({ provider: 'openai-compatible', key: 'sk-local-0001', base_url: 'http://127.0.0.1:1/v1' });
        const csrf = csrfOf((await gw2.request('GET', '/provider-keys', { headers: { cookie } })).text);
        const test = (provider: string) => gw2.request('POST', `/provider-keys/${provider}/test`, { form: `csrf=${csrf}`, headers: { cookie } });

        const anthropic = await test('anthropic');
        assert.equal(anthropic.status, 200);
        assert.match(anthropic.text, /<p class="check ok" role="status"><strong>OK<\/strong>: the provider accepted the key \(\d+ ms\). It lists 3 models.<\/p>/);
        const call = fake.calls.last()!;
        assert.deepEqual([call.method, call.url, call.headers['x-api-key'], call.headers['anthropic-version']], ['GET', '/v1/models', 'sk-ant-right-0000', '2023-06-01']);

        const unreachable = await test('openai-compatible');
        assert.equal(unreachable.status, 200);
        assert.match(unreachable.text, /<p class="check failed" role="alert"><strong>Failed<\/strong>: The OpenAI-compatible server API could not be reached. <span class="muted">\(upstream_unreachable, HTTP 502\)<\/span><\/p>/);
        assert.equal((await test('openai')).status, 404, 'no key stored: nothing to test');
      } finally {
        await fake.close();
        await gw2.close();
      }
    });

    test('assets: only the allow-list, with their types, a year of caching for the current version, gzip and 304', async () => {
      const page = await gw.request('GET', '/sign-in');
      const css = /href="(\/assets\/[^/]+\/console.css)"/.exec(page.text)![1]!;
      const js = /src="(\/assets\/[^/]+\/console.js)"/.exec(page.text)![1]!;
      const r = await gw.request('GET', css);
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'text/css; charset=utf-8');
      assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.match(r.text, /--accent/);
      const script = await gw.request('GET', js);
      assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8');
      const version = js.split('/')[2]!;
      const chart = await gw.app.inject({ method: 'GET', url: `/assets/${version}/chart.umd.min.js`, headers: { 'accept-encoding': 'gzip, br' } });
      assert.equal(chart.statusCode, 200);
      assert.equal(chart.headers['content-encoding'], 'gzip');
      assert.equal(chart.headers['cache-control'], 'no-cache', 'another version: served, but revalidated');
      const unzipped = gunzipSync(chart.rawPayload).toString();
      assert.match(unzipped, /Chart\.js v4/);
      assert.doesNotMatch(unzipped, /sourceMappingURL/);
      const etag = String(r.headers['etag']);
      assert.equal((await gw.request('GET', css, { headers: { 'if-none-match': etag } })).status, 304);
      for (const path of ['/assets/x/package.json', '/assets/x/..%2F..%2Fconfig.ts', '/assets/x/chart.umd.min.js.map', '/assets/x/console.ts', '/assets/console.css']) {
        assert.equal((await gw.request('GET', path)).status, 404, path);
      }
    });

    test('another sign-in method plugs in: its button carries the CSRF token, its route is CSRF-checked and starts a console session', async () => {
      const { tenantId } = await gw.signup();
      const app = await createHttpApp({ logger: gw.deps.log, metrics: gw.deps.metrics, bodyLimit: 65536, trustProxy: false, title: 't', version: '0' });
      await registerConsole(app, gw.deps, {
        signInButtons: [{ label: 'Sign in with your account', action: '/sign-in/test-method' }],
        signInRoutes: [
          async (scope) => {
            scope.post('/sign-in/test-method', async (request, reply) => {
              await startConsoleSession(gw.deps, request, reply, tenantId);
              return reply.redirect('/', 303);
            });
          },
        ],
      });
      try {
        const page = await app.inject({ method: 'GET', url: '/sign-in' });
        const cookie = String(page.headers['set-cookie']).split(';')[0]!;
        assert.match(page.body, /<form method="post" action="\/sign-in\/test-method"><input type="hidden" name="csrf" value="[^"]+"><button type="submit" class="secondary">Sign in with your account<\/button><\/form>/);
        const forged = await app.inject({ method: 'POST', url: '/sign-in/test-method', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
        assert.equal(forged.statusCode, 403);
        const signed = await app.inject({ method: 'POST', url: '/sign-in/test-method', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: `csrf=${csrfOf(page.body)}` });
        assert.equal(signed.statusCode, 303);
        const session = String(([] as string[]).concat(signed.headers['set-cookie'] as string[]).find((c) => c.startsWith('gw_console=')));
        const home = await app.inject({ method: 'GET', url: '/', headers: { cookie: session.split(';')[0]! } });
        assert.equal(home.statusCode, 200);
        assert.match(home.body, /<h1>Overview<\/h1>/);
      } finally {
        await app.close();
      }
    });
  });
}
