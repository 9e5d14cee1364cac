import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { assertErrorPage, RawOAuth, type Who } from '../helpers/oauth-raw.ts';

/** Each form of a page: its action and its hidden fields. */
function forms(html: string): { action: string; fields: Record<string, string> }[] {
  return [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].map((m) => ({
    action: m[1]!.replaceAll('&amp;', '&'),
    fields: Browser.fields(m[2]!),
  }));
}

for (const kind of DB_KINDS) {
  describe(`the account page, HTTP level (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    before(async () => {
      auth = await startOAuth(kind);
      raw = new RawOAuth(auth);
    });
    after(() => auth.close());

    const account = () => `${auth.url}/account`;
    const me = (token: string) => auth.request('GET', '/v1/me', { token });

    /** A fresh user signed in through the sign-in page, reached from the account page; returns the browser. */
    async function signedIn(who?: Who): Promise<{ browser: Browser; who: Who }> {
      const user = who ?? (await auth.verifiedAccount());
      const browser = new Browser(false);
      const first = await browser.request(account());
      assert.equal(first.status, 303);
      assert.equal(first.location, `${auth.url}/oauth/login?return_to=%2Faccount`);
      const login = await browser.request(first.location!);
      assert.equal(login.status, 200);
      assert.match(login.text, /to see your signed-in devices and the applications that can act for you/);
      const fields = Browser.fields(login.text);
      assert.deepEqual(Object.keys(fields).sort(), ['csrf', 'return_to']);
      assert.equal(fields['return_to'], '/account');
      const posted = await browser.request(`${auth.url}/oauth/login`, { form: { ...fields, email: user.email, password: user.password } });
      assert.equal(posted.status, 303, posted.text);
      assert.equal(posted.location, account(), 'back to the account page');
      return { browser, who: user };
    }

    test('the page lists the sessions (this one marked) and grants, is never cached, and carries the CSRF token in every form', async () => {
      const { browser, who } = await signedIn();
      const other = await auth.login(who.email);
      await raw.tokens(who, { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT });
      const page = await browser.request(account());
      assert.equal(page.status, 200);
      assert.equal(page.headers.get('cache-control'), 'no-store');
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'.*form-action 'self';.*frame-ancestors 'none'/);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
      assert.ok(page.text.includes(`Signed in as ${who.email}.`));
      assert.equal((page.text.match(/This device/g) ?? []).length, 1, 'exactly one session marked');

      const all = forms(page.text);
      const csrf = browser.cookies.get('auth_csrf');
      assert.ok(csrf);
      assert.ok(all.every((f) => f.fields['csrf'] === csrf), 'every form carries the CSRF token');
      const signOuts = all.filter((f) => f.action === `${account()}/sessions/sign-out`);
      const otherId = (await auth.request('GET', '/v1/sessions', { token: other })).body.sessions.find((s: { current: boolean }) => s.current).id;
      assert.equal(signOuts.length, 3, 'the page session, the API session, the OAuth sign-in browser session');
      assert.ok(signOuts.some((f) => f.fields['session'] === otherId));
      const revokes = all.filter((f) => f.action === `${account()}/grants/revoke`);
      assert.deepEqual(revokes.map((f) => f.fields['client_id']), [STATIC_CLIENT_ID]);
      assert.match(page.text, /<button type="submit" class="secondary">Revoke<span class="sr-only"> access of product\.example<\/span><\/button>/);
    });

    test('"Sign out" of another device ends that session; the page says so; "Revoke" ends a grant', async () => {
      const { browser, who } = await signedIn();
      const other = await auth.login(who.email);
      const tokens = await raw.tokens(who, { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT });
      const otherId = (await auth.request('GET', '/v1/sessions', { token: other })).body.sessions.find((s: { current: boolean }) => s.current).id;
      const csrf = browser.cookies.get('auth_csrf')!;

      const out = await browser.request(`${account()}/sessions/sign-out`, { form: { session: otherId, csrf } });
      assert.equal(out.status, 303, out.text);
      assert.equal(out.location, `${account()}?done=session`);
      assert.equal((await me(other)).status, 401, 'the other device is signed out');
      const after = await browser.request(out.location!);
      assert.match(after.text, /<p role="status">The device is signed out\.<\/p>/);
      assert.ok(!after.text.includes(otherId), 'no longer listed');

      const revoked = await browser.request(`${account()}/grants/revoke`, { form: { client_id: STATIC_CLIENT_ID, csrf } });
      assert.equal(revoked.status, 303, revoked.text);
      assert.equal(revoked.location, `${account()}?done=grant`);
      assert.deepEqual((await raw.introspect(tokens.access_token)).body, { active: false }, 'its access token is inactive');
      assert.match((await browser.request(revoked.location!)).text, /No application can act for you\./);
    });

    test('"Sign out" of this device ends the browser session and clears its cookie', async () => {
      const { browser } = await signedIn();
      const token = browser.cookies.get('auth_session')!;
      const page = await browser.request(account());
      const mine = forms(page.text).find((f) => f.action.endsWith('/sessions/sign-out'))!;
      const r = await browser.request(`${account()}/sessions/sign-out`, { form: mine.fields });
      assert.equal(r.status, 200);
      assert.match(r.text, /You are signed out/);
      assert.equal((await me(token)).status, 401);
      assert.equal((await browser.request(account())).status, 303, 'the page asks to sign in again');
    });

    test('a cross-site POST, or one without the CSRF token, is refused with 403 and changes nothing', async () => {
      const { browser, who } = await signedIn();
      const other = await auth.login(who.email);
      await raw.tokens(who, { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT });
      const otherId = (await auth.request('GET', '/v1/sessions', { token: other })).body.sessions.find((s: { current: boolean }) => s.current).id;
      const csrf = browser.cookies.get('auth_csrf')!;
      const attempts: { path: string; form: Record<string, string>; headers?: Record<string, string> }[] = [
        { path: '/sessions/sign-out', form: { session: otherId } },
        { path: '/sessions/sign-out', form: { session: otherId, csrf: `csrf_${'A'.repeat(43)}` } },
        { path: '/sessions/sign-out', form: { session: otherId, csrf }, headers: { origin: 'https://evil.example' } },
        { path: '/grants/revoke', form: { client_id: STATIC_CLIENT_ID } },
        { path: '/grants/revoke', form: { client_id: STATIC_CLIENT_ID, csrf }, headers: { origin: 'https://evil.example' } },
      ];
      for (const a of attempts) {
        const r = await browser.request(`${account()}${a.path}`, { form: a.form, headers: a.headers ?? {} });
        assertErrorPage(r, 403);
        assert.equal(r.headers.get('cache-control'), 'no-store');
      }
      assert.equal((await me(other)).status, 200, 'the other session is untouched');
      assert.equal((await auth.request('GET', '/v1/grants', { token: other })).body.grants.length, 1, 'the grant is untouched');
    });

    test('the sign-in page returns only to the account page: any other return_to is refused, never redirected to', async () => {
      const evil = ['https://evil.example/', '//evil.example/account', '/\\evil.example', `${auth.url}/account`, '/account/', '/Account', '/account?x=1', '/oauth/logout'];
      for (const returnTo of evil) {
        const r = await new Browser(false).request(`${auth.url}/oauth/login?return_to=${encodeURIComponent(returnTo)}`);
        assertErrorPage(r, 400);
        assert.ok(!r.text.includes('name="email"'), `no sign-in form for ${returnTo}`);
      }
      // A forged form that names another return path: refused before the password is checked, no session.
      const who = await auth.verifiedAccount();
      const browser = new Browser(false);
      const page = await browser.request(`${auth.url}/oauth/login?return_to=%2Faccount`);
      const fields = { ...Browser.fields(page.text), return_to: 'https://evil.example/', email: who.email, password: who.password };
      const r = await browser.request(`${auth.url}/oauth/login`, { form: fields });
      assertErrorPage(r, 400);
      assert.equal(browser.cookies.get('auth_session'), undefined, 'not signed in');
    });

    test('a second login as someone else replaces the browser session: the page shows who is signed in now', async () => {
      const { browser } = await signedIn();
      const second = await auth.verifiedAccount();
      const login = await browser.request(`${auth.url}/oauth/login?return_to=%2Faccount`);
      const posted = await browser.request(`${auth.url}/oauth/login`, { form: { ...Browser.fields(login.text), email: second.email, password: second.password } });
      assert.equal(posted.location, account());
      assert.ok((await browser.request(account())).text.includes(`Signed in as ${second.email}.`));
    });
  });
}

describe('the account page is not served behind the edge (OAUTH_PUBLIC_ENDPOINTS unset)', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startOAuth('sqlite', { publicEndpoints: false });
  });
  after(() => auth.close());

  test('GET /account is 404 even with the key, and the sign-in page does not offer to return there', async () => {
    assert.equal((await auth.request('GET', '/account')).status, 404);
    assert.equal((await auth.request('POST', '/account/grants/revoke')).status, 404);
    assertErrorPage(await auth.request('GET', '/oauth/login?return_to=%2Faccount'), 400);
  });
});
