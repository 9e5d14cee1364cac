import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { Browser, startOAuth } from '../helpers/oauth.ts';

const SESSION = '__Host-auth_session';

/** The Set-Cookie header of a reply for `name`, split into its attributes (lower-cased names; the value first). */
function setCookie(headers: Headers, name: string): { value: string; attributes: Map<string, string> } {
  const line = headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  assert.ok(line, `no Set-Cookie for ${name} in ${JSON.stringify(headers.getSetCookie())}`);
  const [pair, ...rest] = line.split(';').map((p) => p.trim());
  const attributes = new Map<string, string>();
  for (const a of rest) {
    const eq = a.indexOf('=');
    attributes.set((eq < 0 ? a : a.slice(0, eq)).toLowerCase(), eq < 0 ? '' : a.slice(eq + 1));
  }
  return { value: pair!.slice(name.length + 1), attributes };
}

/**
 * Issue 31, A4: "Sign out this device" revoked the session but its clearing
 * Set-Cookie for __Host-auth_session had no Secure attribute, so browsers
 * ignored it in production (a __Host- cookie is only ever set, or replaced,
 * with Secure and Path=/, RFC 6265bis section 4.1.3.2) and kept sending the
 * dead token. The clearing header now carries every attribute the setting
 * one does. Production mode (NODE_ENV=production) is what gives the cookie
 * its __Host- name and Secure; one database kind is enough, as the cookie
 * does not depend on it.
 */
describe('signing out clears the __Host- session cookie with the attributes that set it (production)', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startOAuth('sqlite', {
      env: {
        NODE_ENV: 'production',
        AUTH_ENCRYPTION_KEY: 'ab'.repeat(32),
        AUTH_BCRYPT_COST: '12',
        OAUTH_CLIENT_METADATA_ALLOW_INSECURE: 'false',
      },
    });
  });
  after(() => auth.close());

  /** Signs a fresh account in through the account page's sign-in; returns the browser and the session cookie as set. */
  async function signedIn() {
    const who = await auth.verifiedAccount();
    const browser = new Browser(false);
    const first = await browser.request(`${auth.url}/account`);
    const login = await browser.request(first.location!);
    const posted = await browser.request(`${auth.url}/oauth/login`, { form: { ...Browser.fields(login.text), email: who.email, password: who.password } });
    assert.equal(posted.status, 303, posted.text);
    return { browser, set: setCookie(posted.headers, SESSION) };
  }

  /** The attributes that must match between setting and clearing: all but the expiry. */
  const scope = (attributes: Map<string, string>) => [...attributes].filter(([k]) => k !== 'expires' && k !== 'max-age').sort();

  for (const [surface, signOut] of [
    [
      'the account page: "Sign out" of this device',
      async (browser: Browser) => {
        const page = await browser.request(`${auth.url}/account`);
        const sessions = await auth.request('GET', '/v1/sessions', { token: browser.cookies.get(SESSION)! });
        const mine = sessions.body.sessions.find((s: { current: boolean }) => s.current).id as string;
        const form = [...page.text.matchAll(/<form method="post" action="[^"]+\/account\/sessions\/sign-out">([\s\S]*?)<\/form>/g)]
          .map((m) => Browser.fields(m[1]!))
          .find((fields) => fields['session'] === mine);
        assert.ok(form, 'the sign-out form of this device');
        return browser.request(`${auth.url}/account/sessions/sign-out`, { form });
      },
    ],
    [
      'POST /oauth/logout',
      async (browser: Browser) => {
        const ask = await browser.request(`${auth.url}/oauth/logout`);
        return browser.request(`${auth.url}/oauth/logout`, { form: Browser.fields(ask.text) });
      },
    ],
  ] as const) {
    test(surface, async () => {
      const { browser, set } = await signedIn();
      assert.ok(set.attributes.has('secure'), 'set with Secure');
      const out = await signOut(browser);
      assert.equal(out.status, 200, out.text);
      assert.match(out.text, /You are signed out/);
      const cleared = setCookie(out.headers, SESSION);
      assert.equal(cleared.value, '');
      assert.equal(new Date(cleared.attributes.get('expires') ?? '').getTime(), 0, 'expired');
      assert.deepEqual(scope(cleared.attributes), scope(set.attributes), 'Secure, Path, HttpOnly and SameSite as when it was set');
      assert.deepEqual(scope(cleared.attributes), [['httponly', ''], ['path', '/'], ['samesite', 'Lax'], ['secure', '']]);
    });
  }
});
