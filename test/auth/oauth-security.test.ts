import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, pkce, STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { assertErrorPage, LOOPBACK_CB, RawOAuth, type Who } from '../helpers/oauth-raw.ts';

// RFC 9700 at the authorization endpoint and on the pages; the token endpoint is in
// oauth-security-token.test.ts, clients (registration, metadata URLs) in oauth-security-clients.test.ts.

for (const kind of DB_KINDS) {
  describe(`RFC 9700: authorization endpoint and pages (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let user: Who;
    let publicId: string;
    before(async () => {
      auth = await startOAuth(kind);
      raw = new RawOAuth(auth);
      user = await auth.verifiedAccount();
      publicId = await raw.publicClient();
      // Sign the user's browser in once: dynamic clients' errors are redirected only to a signed-in browser.
      await raw.code(user, { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT });
    });
    after(() => auth.close());

    const get = (params: Record<string, string>) => new Browser(false).request(raw.authorizeUrl(params));
    /** The same request from the user's signed-in browser. */
    const signedInGet = (params: Record<string, string>) => raw.browser(user).request(raw.authorizeUrl(params));
    const s256 = async () => ({ code_challenge: (await pkce()).challenge, code_challenge_method: 'S256' });
    const valid = async (clientId = STATIC_CLIENT_ID, redirectUri = STATIC_REDIRECT) => ({
      client_id: clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      state: 'st-1',
      ...(await s256()),
    });
    /** The error redirect to the client: RFC 6749 section 4.1.2.1 with iss (RFC 9207). */
    function assertErrorRedirect(r: { status: number; location: string | null }, redirectUri: string, error: string) {
      assert.equal(r.status, 302);
      const url = new URL(r.location!);
      assert.equal(`${url.origin}${url.pathname}`, redirectUri);
      assert.equal(url.searchParams.get('error'), error);
      assert.ok(url.searchParams.get('error_description'));
      assert.equal(url.searchParams.get('iss'), auth.url);
      assert.equal(url.searchParams.get('state'), 'st-1');
      assert.equal(url.searchParams.get('code'), null);
    }

    test('a well-formed request goes to sign-in (the baseline the refusals below differ from)', async () => {
      const r = await get(await valid());
      assert.equal(r.status, 302);
      assert.equal(new URL(r.location!).pathname, '/oauth/login');
    });

    test('a redirect_uri that is not exactly a registered one gets an error page, never a redirect', async () => {
      for (const redirectUri of [
        'https://attacker.example/callback',
        'https://product.example/callback/extra',
        'https://product.example/callback?next=https://attacker.example',
        'https://product.example.attacker.example/callback',
        'https://attacker.example/https://product.example/callback',
        'http://product.example/callback',
        'https://product.example/callback#fragment',
        'https://product.example:8443/callback',
        'https://PRODUCT.example/callback/',
        'http://127.0.0.1/callback/extra',
        'http://127.0.0.1/callback#fragment',
        'http://localhost/callback',
        'http://user@127.0.0.1/callback',
      ]) {
        const r = await get(await valid(STATIC_CLIENT_ID, redirectUri));
        assertErrorPage(r);
        assert.match(r.text, /redirect_uri is not registered/, redirectUri);
      }
      // The same for a dynamically registered client.
      for (const redirectUri of ['http://127.0.0.1:7777/cb/x', 'http://127.0.0.1:7777/other', 'https://127.0.0.1:7777/cb']) {
        assertErrorPage(await get(await valid(publicId, redirectUri)));
      }
    });

    test('an unknown client or a missing redirect_uri gets an error page, no redirect', async () => {
      for (const clientId of ['no-such-client', 'svc_doesnotexist', `${STATIC_CLIENT_ID}x`]) {
        assertErrorPage(await get(await valid(clientId)));
      }
      const { redirect_uri: _, ...noRedirect } = await valid();
      assertErrorPage(await get(noRedirect));
      const { client_id: __, ...noClient } = await valid();
      assertErrorPage(await get(noClient));
    });

    test('open redirect: other errors in the request never send the browser to an unregistered URI', async () => {
      const evil = 'https://attacker.example/steal';
      const extras: Record<string, string>[] = [{ response_type: 'token' }, { scope: 'no-such-scope' }, { prompt: 'none' }, { code_challenge_method: 'plain' }];
      for (const extra of extras) {
        const r = await get({ ...(await valid(STATIC_CLIENT_ID, evil)), ...extra });
        assertErrorPage(r);
        assert.ok(!r.text.includes('attacker.example'), 'the page does not even link to it');
      }
      // Duplicated redirect_uri (one good, one evil) is refused outright.
      const url = `${raw.authorizeUrl(await valid())}&redirect_uri=${encodeURIComponent(evil)}`;
      assertErrorPage(await new Browser(false).request(url));
    });

    test('PKCE is required for public clients, S256 only', async () => {
      const { code_challenge: _c, code_challenge_method: _m, ...noPkce } = await valid(publicId, LOOPBACK_CB);
      assertErrorRedirect(await signedInGet(noPkce), LOOPBACK_CB, 'invalid_request');
      assertErrorPage(await get(noPkce));
      const challenge = (await pkce()).challenge;
      const methods: Record<string, string>[] = [{ code_challenge_method: 'plain' }, {}, { code_challenge_method: 's256' }];
      for (const method of methods) {
        assertErrorRedirect(await signedInGet({ ...noPkce, code_challenge: challenge, ...method }), LOOPBACK_CB, 'invalid_request');
      }
      // plain with a verifier-like value as the challenge, for the confidential client too.
      const { code_challenge: _c2, code_challenge_method: _m2, ...staticNoPkce } = await valid();
      assertErrorRedirect(await get({ ...staticNoPkce, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }), STATIC_REDIRECT, 'invalid_request');
      assertErrorRedirect(await get({ ...staticNoPkce, code_challenge: 'short', code_challenge_method: 'S256' }), STATIC_REDIRECT, 'invalid_request');
    });

    test('unknown scope is invalid_scope, response_type=token is unsupported_response_type', async () => {
      assertErrorRedirect(await get({ ...(await valid()), scope: 'identity admin' }), STATIC_REDIRECT, 'invalid_scope');
      for (const responseType of ['token', 'code token', 'id_token']) {
        assertErrorRedirect(await get({ ...(await valid()), response_type: responseType }), STATIC_REDIRECT, 'unsupported_response_type');
      }
      for (const resource of ['https://messages.example/api#x', 'not a uri', '/relative']) {
        assertErrorRedirect(await get({ ...(await valid()), resource }), STATIC_REDIRECT, 'invalid_target');
      }
    });

    test("a client registered with a scope may ask for no more (a write scope brings its read scope)", async () => {
      const limited = await raw.publicClient([LOOPBACK_CB], { scope: 'identity msg:messages:write' });
      assertErrorRedirect(await signedInGet({ ...(await valid(limited, LOOPBACK_CB)), scope: 'work:tasks:read' }), LOOPBACK_CB, 'invalid_scope');
      for (const scope of ['identity msg:messages:read', 'msg:messages:write']) {
        const r = await get({ ...(await valid(limited, LOOPBACK_CB)), scope });
        assert.equal(new URL(r.location!).pathname, '/oauth/login', scope);
      }
    });

    describe('CSRF on the login and consent forms', () => {
      /** A browser on the login page of a fresh request: its hidden fields and the pending request. */
      async function onLoginPage() {
        const browser = new Browser(false);
        const start = await browser.request(raw.authorizeUrl(await valid(publicId, LOOPBACK_CB)));
        const page = await browser.request(start.location!);
        assert.equal(page.status, 200);
        return { browser, fields: Browser.fields(page.text) };
      }
      const loginForm = (fields: Record<string, string>) => ({ ...fields, email: user.email, password: user.password });
      const codes = async () => (await auth.service.deps.db.selectFrom('oauth_codes').select('id').execute()).length;

      function assertRefused(r: { status: number; headers: Headers; location: string | null }) {
        assertErrorPage(r, 403);
        assert.equal(r.location, null);
        assert.ok(!r.headers.getSetCookie().some((c) => c.startsWith('auth_session=')), 'no session cookie');
      }

      test('POST /oauth/login without the csrf field, with a wrong one or from a foreign Origin is 403', async () => {
        const { browser, fields } = await onLoginPage();
        const { csrf, ...withoutCsrf } = fields;
        const action = `${auth.url}/oauth/login`;
        assertRefused(await browser.request(action, { form: loginForm(withoutCsrf) }));
        assertRefused(await browser.request(action, { form: loginForm({ ...fields, csrf: `${csrf!.slice(0, -2)}xx` }) }));
        // Another browser's valid token (the attacker's own) does not match this browser's cookie.
        const attacker = await onLoginPage();
        assertRefused(await browser.request(action, { form: loginForm({ ...fields, csrf: attacker.fields['csrf']! }) }));
        for (const origin of ['https://attacker.example', 'null', auth.url.replace('127.0.0.1', 'localhost')]) {
          assertRefused(await browser.request(action, { form: loginForm(fields), headers: { origin } }));
        }
        // Without a CSRF cookie at all (a cross-site post in a fresh browser).
        assertRefused(await new Browser(false).request(action, { form: loginForm(fields) }));
        // The same form from our own origin goes through.
        const ok = await browser.request(action, { form: loginForm(fields), headers: { origin: auth.url } });
        assert.equal(ok.status, 303);
        assert.equal(new URL(ok.location!).pathname, '/oauth/consent');
      });

      test('POST /oauth/consent without the csrf field, with a wrong one or from a foreign Origin is 403, no code', async () => {
        const { browser, fields } = await onLoginPage();
        const signedIn = await browser.request(`${auth.url}/oauth/login`, { form: loginForm(fields) });
        const consent = await browser.request(signedIn.location!);
        assert.equal(consent.status, 200);
        const form: Record<string, string> = { ...Browser.fields(consent.text), decision: 'approve' };
        const { csrf, ...withoutCsrf } = form;
        const action = `${auth.url}/oauth/consent`;
        const before = await codes();
        assertRefused(await browser.request(action, { form: withoutCsrf }));
        assertRefused(await browser.request(action, { form: { ...form, csrf: 'csrf_' + 'A'.repeat(43) } }));
        assertRefused(await browser.request(action, { form, headers: { origin: 'https://attacker.example' } }));
        assert.equal(await codes(), before, 'no code was issued');
        assert.ok(csrf);
        const ok = await browser.request(action, { form });
        assert.equal(ok.status, 303);
        assert.ok(new URL(ok.location!).searchParams.get('code'));
      });
    });
  });
}
