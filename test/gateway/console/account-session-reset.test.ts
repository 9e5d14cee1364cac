import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestAuth, type TestAuth, tokenFromMail } from '../../helpers/auth.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { Browser } from '../../helpers/oauth.ts';
import type { ReceivedMail } from '../../helpers/smtp.ts';

const CLIENT_ID = 'gateway-console';
const CLIENT_SECRET = 'gateway-console-secret-0123456789abcdef';
/** The gateway's public URL: the app is driven through app.inject, so nothing listens there. */
const GATEWAY_URL = 'http://127.0.0.1:8999';
const CHECK_MS = 300_000;
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? assert.fail(`no CSRF field in ${html.slice(0, 300)}`);

/** A browser's cookies at the gateway, for app.inject. */
class Jar {
  readonly cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  take(setCookie: unknown): void {
    for (const c of ([] as string[]).concat((setCookie as string[] | string | undefined) ?? [])) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const value = pair!.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) this.cookies.delete(pair!.slice(0, eq));
      else this.cookies.set(pair!.slice(0, eq), value);
    }
  }
}

/**
 * A password reset at the account service ends the console sessions opened
 * through it (docs/security.md), with both real services: the account
 * service (OAuth public, the console as its first-party static client)
 * listening on a port, and the gateway's control plane through app.inject on
 * a clock the test moves past GATEWAY_ACCOUNTS_SESSION_CHECK_SECONDS.
 */
for (const kind of DB_KINDS) {
  describe(`a password reset ends the console sessions opened with the account (the real account service, ${kind})`, () => {
    let auth: TestAuth;
    let gw: TestGateway;
    let authClosed = false;
    before(async () => {
      auth = await startTestAuth(kind, {
        OAUTH_CLIENT_ID: CLIENT_ID,
        OAUTH_CLIENT_SECRET: CLIENT_SECRET,
        OAUTH_CLIENT_REDIRECT_URIS: `${GATEWAY_URL}/sign-in/account/callback`,
        OAUTH_PUBLIC_ENDPOINTS: 'true',
        AUTH_LIMIT_LOGIN: '1000/300',
        AUTH_LIMIT_REGISTER: '1000/3600',
      });
      gw = await startTestGateway(kind, {
        GATEWAY_BASE_URL: GATEWAY_URL,
        GATEWAY_ACCOUNTS_URL: auth.url,
        GATEWAY_ACCOUNTS_CLIENT_ID: CLIENT_ID,
        GATEWAY_ACCOUNTS_CLIENT_SECRET: CLIENT_SECRET,
      });
    });
    after(async () => {
      await gw?.close();
      if (!authClosed) await auth?.close();
    });

    /** The console's "Sign in with your account", the account service's sign-in and consent pages walked by a browser. */
    async function consoleSignIn(who: { email: string; password: string }): Promise<Jar> {
      const jar = new Jar();
      const page = await gw.request('GET', '/sign-in');
      jar.take(page.headers['set-cookie']);
      const pressed = await gw.request('POST', '/sign-in/account', { form: `csrf=${encodeURIComponent(csrfOf(page.text))}`, headers: { cookie: jar.header() } });
      assert.equal(pressed.status, 303, pressed.text);
      jar.take(pressed.headers['set-cookie']);
      const back = await new Browser(false).authorize(String(pressed.headers['location']), who);
      assert.equal(`${back.origin}${back.pathname}`, `${GATEWAY_URL}/sign-in/account/callback`);
      const done = await gw.request('GET', `${back.pathname}${back.search}`, { headers: { cookie: jar.header() } });
      assert.equal(done.status, 303, done.text);
      jar.take(done.headers['set-cookie']);
      assert.ok(jar.cookies.get('gw_console'), 'signed in to the console');
      return jar;
    }
    const consolePage = async (jar: Jar) => {
      const r = await gw.request('GET', '/', { headers: { cookie: jar.header() } });
      jar.take(r.headers['set-cookie']);
      return r;
    };
    async function resetPassword(email: string): Promise<void> {
      assert.equal((await auth.request('POST', '/v1/password/forgot', { body: { email, ip: '198.51.100.9' } })).status, 200);
      const mail: ReceivedMail = await auth.smtp.waitFor((m) => m.to.includes(email) && m.subject === 'Reset your password');
      const reset = await auth.request('POST', '/v1/password/reset', { body: { token: tokenFromMail(mail), password: 'a brand new passphrase here' } });
      assert.equal(reset.status, 200, reset.text);
    }

    test("a reset signs the account's console sessions out at their next use after the check interval; another account's reset signs no one else out", async () => {
      const owner = await auth.verifiedAccount();
      const other = await auth.verifiedAccount();
      const ownerJar = await consoleSignIn(owner);
      const otherJar = await consoleSignIn(other);
      const ownerToken = ownerJar.cookies.get('gw_console')!;
      assert.equal((await consolePage(ownerJar)).status, 200);

      await resetPassword(other.email);
      gw.clock.advance(CHECK_MS);
      assert.equal((await consolePage(ownerJar)).status, 200, "another account's reset leaves this session alone");
      const signedOut = await consolePage(otherJar);
      assert.deepEqual([signedOut.status, signedOut.headers['location']], [303, '/sign-in']);

      await resetPassword(owner.email);
      assert.equal((await consolePage(ownerJar)).status, 200, 'within the interval the session is not rechecked');
      gw.clock.advance(CHECK_MS);
      const ended = await consolePage(ownerJar);
      assert.deepEqual([ended.status, ended.headers['location']], [303, '/sign-in']);
      assert.equal(ownerJar.cookies.get('gw_console'), undefined, 'the cookie is cleared');
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: ownerToken })).status, 401, 'the session is ended for the API too');

      // Signing in again with the new password works, into the same workspace.
      const again = await consoleSignIn({ email: owner.email, password: 'a brand new passphrase here' });
      assert.equal((await consolePage(again)).status, 200);
    });

    test('the account service unreachable: the session goes on', async () => {
      const who = await auth.verifiedAccount();
      const jar = await consoleSignIn(who);
      await auth.close();
      authClosed = true;
      gw.clock.advance(CHECK_MS);
      const page = await consolePage(jar);
      assert.equal(page.status, 200);
      assert.match(page.text, /<h1>Overview<\/h1>/);
    });
  });
}
