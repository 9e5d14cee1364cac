import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, pkce, STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { assertErrorPage, LOOPBACK_CB, RawOAuth, startDocServer, type Who } from '../helpers/oauth-raw.ts';

// Regression tests of the security review's findings at the authorization endpoint:
// native-app impersonation (RFC 8252 section 8.6), open redirection through registered
// clients (RFC 9700 section 4.11.2), stored-parameter bounds, prompt handling, consent
// per redirect URI, and signing out of the browser session.

const WEB_CB = 'https://app.example/cb';
const NATIVE_CB = 'com.example.app:/cb';

for (const kind of DB_KINDS) {
  describe(`authorization endpoint hardening (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let loopbackId: string;
    let webId: string;
    let nativeId: string;
    before(async () => {
      auth = await startOAuth(kind);
      raw = new RawOAuth(auth);
      loopbackId = await raw.publicClient([LOOPBACK_CB], { application_type: 'native' });
      webId = await raw.publicClient([WEB_CB]);
      nativeId = await raw.publicClient([NATIVE_CB], { application_type: 'native' });
    });
    after(() => auth.close());

    async function params(clientId: string, redirectUri: string, extra: Record<string, string> = {}) {
      const { challenge } = await pkce();
      return {
        client_id: clientId,
        redirect_uri: redirectUri,
        response_type: 'code',
        state: 'st-1',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...extra,
      };
    }
    const fresh = (p: Record<string, string>) => new Browser(false).request(raw.authorizeUrl(p));
    const asUser = (who: Who, p: Record<string, string>) => raw.browser(who).request(raw.authorizeUrl(p));
    const pathOf = (r: { location: string | null }) => new URL(r.location!).pathname;
    /** A verified user whose browser granted `clientId` at `redirectUri` once, through the pages. */
    async function consented(clientId: string, redirectUri: string): Promise<Who> {
      const who = await auth.verifiedAccount();
      await raw.code(who, { clientId, redirectUri });
      return who;
    }

    describe('a local program cannot reuse consent given to a native app (RFC 8252 section 8.6)', () => {
      for (const [label, client, redirect] of [
        ['loopback', () => loopbackId, LOOPBACK_CB.replace('7777', '7778')],
        ['private-use scheme', () => nativeId, NATIVE_CB],
      ] as const) {
        test(`${label}: remembered consent still shows the page; prompt=none is consent_required`, async () => {
          const who = await consented(client(), redirect);
          const again = await asUser(who, await params(client(), redirect));
          assert.equal(again.status, 302);
          assert.equal(pathOf(again), '/oauth/consent', 'the consent page, not a code');
          const silent = await asUser(who, await params(client(), redirect, { prompt: 'none' }));
          const url = new URL(silent.location!);
          assert.equal(url.searchParams.get('error'), 'consent_required');
          assert.equal(url.searchParams.get('code'), null);
        });
      }

      test('an https client and the confidential client still skip the page on remembered consent', async () => {
        for (const [clientId, redirect] of [
          [webId, WEB_CB],
          [STATIC_CLIENT_ID, 'http://127.0.0.1/callback'],
        ] as const) {
          const who = await consented(clientId, redirect);
          const again = await asUser(who, await params(clientId, redirect));
          assert.ok(new URL(again.location!).searchParams.get('code'), `${clientId}: a code at once`);
          const silent = await asUser(who, await params(clientId, redirect, { prompt: 'none' }));
          assert.ok(new URL(silent.location!).searchParams.get('code'), `${clientId}: prompt=none gets a code`);
        }
      });
    });

    describe('registered clients cannot use the endpoint as an open redirector (RFC 9700 section 4.11.2)', () => {
      const bad: Record<string, string>[] = [{ response_type: 'token' }, { scope: 'no-such-scope' }, { prompt: 'none' }, { prompt: 'bogus' }];

      test('a dynamically registered client: errors before sign-in are shown on our page', async () => {
        for (const extra of bad) {
          const r = await fresh(await params(webId, WEB_CB, extra));
          assertErrorPage(r);
          assert.ok(!r.text.includes('app.example'), JSON.stringify(extra));
        }
      });

      test('a metadata-URL client: the same', async () => {
        const docs = await startDocServer((_req, res, base) => {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `${base}/client.json`, redirect_uris: [WEB_CB] }));
        });
        try {
          for (const extra of bad) assertErrorPage(await fresh(await params(`${docs.base}/client.json`, WEB_CB, extra)));
        } finally {
          await docs.close();
        }
      });

      test('once the user has signed in, and for the static client, errors are redirected as RFC 6749 says', async () => {
        const who = await consented(STATIC_CLIENT_ID, STATIC_REDIRECT);
        const r = await asUser(who, await params(webId, WEB_CB, { response_type: 'token' }));
        assert.equal(r.status, 302);
        assert.equal(new URL(r.location!).searchParams.get('error'), 'unsupported_response_type');
        const s = await fresh(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { response_type: 'token' }));
        assert.equal(new URL(s.location!).origin + new URL(s.location!).pathname, STATIC_REDIRECT);
      });
    });

    describe('stored parameters are bounded', () => {
      const pending = async () => (await auth.service.deps.db.selectFrom('oauth_requests').select('id').execute()).length;

      test('a state over 1024 characters is refused and nothing is stored; 1024 is accepted', async () => {
        const before = await pending();
        const r = await fresh(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { state: 's'.repeat(15_000) }));
        const url = new URL(r.location!);
        assert.equal(url.searchParams.get('error'), 'invalid_request');
        assert.equal(url.searchParams.get('state'), null, 'the oversized state is not echoed');
        assert.equal(await pending(), before);
        const ok = await fresh(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { state: 's'.repeat(1024) }));
        assert.equal(pathOf(ok), '/oauth/login');
        assert.equal(await pending(), before + 1);
      });

      test('an over-long resource or scope is refused', async () => {
        const resource = `https://api.example/${'r'.repeat(1100)}`;
        const r = await fresh(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { resource }));
        assert.equal(new URL(r.location!).searchParams.get('error'), 'invalid_target');
        const s = await fresh(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { scope: 'identity '.repeat(200) }));
        assert.equal(new URL(s.location!).searchParams.get('error'), 'invalid_scope');
      });

      test('expired pending requests are purged within a minute of their expiry, not by the hourly purge', async () => {
        await fresh(await params(STATIC_CLIENT_ID, STATIC_REDIRECT));
        assert.ok((await pending()) > 0);
        auth.clock.advance(10 * 60_000 + 61_000);
        assert.equal(await auth.service.requestPurgeJob.runOnce(), true);
        assert.equal(await pending(), 0);
      });
    });

    describe('prompt', () => {
      test('prompt=login asks a signed-in user to sign in again, even with remembered consent', async () => {
        const who = await consented(STATIC_CLIENT_ID, STATIC_REDIRECT);
        const r = await asUser(who, await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { prompt: 'login' }));
        assert.equal(pathOf(r), '/oauth/login');
        const callback = await raw.browser(who).authorize(raw.authorizeUrl(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { prompt: 'login' })), who);
        assert.ok(callback.searchParams.get('code'), 'after signing in, the remembered consent applies');
      });

      test('a list is honoured: "login consent" signs in, then shows the consent page', async () => {
        const who = await consented(STATIC_CLIENT_ID, STATIC_REDIRECT);
        const browser = raw.browser(who);
        const start = await browser.request(raw.authorizeUrl(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { prompt: 'login consent' })));
        assert.equal(pathOf(start), '/oauth/login');
        const page = await browser.request(start.location!);
        const signedIn = await browser.request(`${auth.url}/oauth/login`, { form: { ...Browser.fields(page.text), ...who } });
        assert.equal(pathOf(signedIn), '/oauth/consent');
      });

      test('unknown values and none with another value are invalid_request', async () => {
        for (const prompt of ['none login', 'bogus', 'consent bogus']) {
          const r = await fresh(await params(STATIC_CLIENT_ID, STATIC_REDIRECT, { prompt }));
          assert.equal(new URL(r.location!).searchParams.get('error'), 'invalid_request', prompt);
        }
      });
    });

    test('consent is tied to the redirect URI it was given for', async () => {
      const who = await consented(STATIC_CLIENT_ID, STATIC_REDIRECT);
      const same = await asUser(who, await params(STATIC_CLIENT_ID, STATIC_REDIRECT));
      assert.ok(new URL(same.location!).searchParams.get('code'));
      const other = await asUser(who, await params(STATIC_CLIENT_ID, 'http://127.0.0.1/callback'));
      assert.equal(pathOf(other), '/oauth/consent', 'another redirect URI of the same client asks again');
    });

    test('the pages answer framework refusals (too many form fields, a wrong content type) with a page, not JSON', async () => {
      const fields = Array.from({ length: 101 }, (_, i) => `f${i}=x`).join('&');
      for (const [path, body, type] of [
        ['/oauth/login', fields, 'application/x-www-form-urlencoded'],
        ['/oauth/consent', 'decision=approve', 'text/plain'],
      ] as const) {
        const r = await auth.request('POST', path, { rawBody: body, headers: { 'content-type': type }, key: false });
        assert.ok(r.status === 400 || r.status === 415, `${path}: ${r.status}`);
        assert.match(r.headers.get('content-type') ?? '', /^text\/html/, path);
        assert.match(r.text, /This request cannot continue/);
      }
    });

    describe('signing out of the browser session', () => {
      test('GET /oauth/logout only asks; POST with the form signs out and revokes the session', async () => {
        const who = await consented(STATIC_CLIENT_ID, STATIC_REDIRECT);
        const browser = raw.browser(who);
        const asked = await browser.request(`${auth.url}/oauth/logout`);
        assert.equal(asked.status, 200);
        assert.ok(asked.text.includes(who.email));
        const stillIn = await browser.request(raw.authorizeUrl(await params(STATIC_CLIENT_ID, STATIC_REDIRECT)));
        assert.ok(new URL(stillIn.location!).searchParams.get('code'), 'the GET did not sign out');

        const sessionCookie = browser.cookies.get('auth_session')!;
        const refused = await browser.request(`${auth.url}/oauth/logout`, { form: { csrf: 'csrf_' + 'A'.repeat(43) } });
        assertErrorPage(refused, 403);
        const out = await browser.request(`${auth.url}/oauth/logout`, { form: Browser.fields(asked.text) });
        assert.equal(out.status, 200);
        assert.match(out.text, /You are signed out/);
        assert.equal(browser.cookies.get('auth_session'), '', 'the cookie is cleared');

        // The old cookie value no longer signs anyone in: the session was revoked, not only forgotten.
        browser.cookies.set('auth_session', sessionCookie);
        const after = await browser.request(raw.authorizeUrl(await params(STATIC_CLIENT_ID, STATIC_REDIRECT)));
        assert.equal(pathOf(after), '/oauth/login');
        const me = await auth.request('GET', '/v1/me', { token: sessionCookie });
        assert.equal(me.status, 401);
      });

      test('"Not you?" on the consent page signs out and returns to sign-in for the same request', async () => {
        const who = await auth.verifiedAccount();
        const browser = raw.browser(who);
        const start = await browser.request(raw.authorizeUrl(await params(webId, WEB_CB)));
        const page = await browser.request(start.location!);
        const signedIn = await browser.request(`${auth.url}/oauth/login`, { form: { ...Browser.fields(page.text), ...who } });
        const consent = await browser.request(signedIn.location!);
        assert.match(consent.text, /Not .+\? <button type="submit" class="link">Sign out<\/button>/);
        const fields = Browser.fields(consent.text);
        const out = await browser.request(`${auth.url}/oauth/logout`, { form: { request: fields['request']!, csrf: fields['csrf']! } });
        assert.equal(out.status, 303);
        assert.equal(new URL(out.location!).searchParams.get('request'), fields['request']);
        assert.equal(pathOf(out), '/oauth/login');
      });
    });
  });
}
