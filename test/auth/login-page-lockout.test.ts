import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';

const MINUTE = 60_000;
const WRONG = 'not the password at all';

/**
 * Defect 7: the public sign-in page told which addresses have accounts (after
 * 5 wrong passwords a known address said "locked", an unknown one kept saying
 * 401). Every answer of the page must be the same for both, lock included,
 * while POST /v1/login keeps its documented account_locked.
 */
for (const kind of DB_KINDS) {
  describe(`the OAuth sign-in page does not tell which addresses have accounts (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startOAuth(kind);
    });
    after(() => auth.close());

    /** A browser on the login page of a fresh authorization request; returns a function posting the form. */
    async function loginForm() {
      const browser = new Browser(false);
      const start = await browser.request(
        `${auth.url}/oauth/authorize?${new URLSearchParams({ client_id: STATIC_CLIENT_ID, redirect_uri: STATIC_REDIRECT, response_type: 'code', scope: 'identity' })}`,
      );
      const page = await browser.request(start.location!);
      const fields = Browser.fields(page.text);
      return async (email: string, password: string) => {
        const r = await browser.request(`${auth.url}/oauth/login`, { form: { ...fields, email, password } });
        // The page echoes the address into its form; everything else must match.
        return { status: r.status, retryAfter: r.headers.get('retry-after'), location: r.location, page: r.text.replaceAll(email, '{email}') };
      };
    }

    const apiLogin = (email: string, password: string) =>
      auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.40' } });

    test('wrong passwords, then the lock: the same status, words and Retry-After for a known and an unknown address', async () => {
      const { email: known } = await auth.verifiedAccount();
      const unknown = uniqueEmail();
      const post = await loginForm();
      const statuses: number[] = [];
      for (let i = 1; i <= 7; i++) {
        const a = await post(known, WRONG);
        const b = await post(unknown, WRONG);
        assert.deepEqual(a, b, `attempt ${i}`);
        statuses.push(a.status);
      }
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);

      // Locked: even the right password gets the same answer as the unknown address.
      const right = await post(known, PASSWORD);
      const other = await post(unknown, PASSWORD);
      assert.deepEqual(right, other);
      assert.equal(right.status, 429);
      assert.equal(right.retryAfter, String(15 * 60));
      assert.match(right.page, /Too many failed sign-ins with this email address; try again later\./);

      // POST /v1/login keeps its contract: the account is locked, the unknown address is 401.
      const api = await apiLogin(known, PASSWORD);
      assert.equal(api.status, 429);
      assert.equal(api.body.code, 'account_locked');
      const apiUnknown = await apiLogin(unknown, PASSWORD);
      assert.equal(apiUnknown.status, 401);
      assert.equal(apiUnknown.body.code, 'invalid_credentials');

      auth.clock.advance(15 * MINUTE + 1);
      const after = await (await loginForm())(known, PASSWORD); // a new request: the first one has expired meanwhile
      assert.equal(after.status, 303, 'signed in once the lock is over');
      assert.equal(new URL(after.location!).pathname, '/oauth/consent');
    });

    test('failures through POST /v1/login count for the page alike, with or without an account', async () => {
      const { email: known } = await auth.verifiedAccount();
      const unknown = uniqueEmail();
      for (let i = 0; i < 5; i++) {
        assert.equal((await apiLogin(known, WRONG)).status, 401);
        assert.equal((await apiLogin(unknown, WRONG)).status, 401, 'the API answers 401 for an unknown address, always');
      }
      assert.equal((await apiLogin(unknown, WRONG)).status, 401);
      const post = await loginForm();
      const a = await post(known, PASSWORD);
      const b = await post(unknown, PASSWORD);
      assert.deepEqual(a, b);
      assert.equal(a.status, 429);
    });

    test('a success resets the address count: four more failures do not lock', async () => {
      const { email } = await auth.verifiedAccount();
      const post = await loginForm();
      for (let i = 0; i < 4; i++) assert.equal((await post(email, WRONG)).status, 401);
      assert.equal((await post(email, PASSWORD)).status, 303);
      const again = await loginForm();
      for (let i = 0; i < 4; i++) assert.equal((await again(email, WRONG)).status, 401);
      assert.equal((await again(email, PASSWORD)).status, 303);
    });
  });
}
