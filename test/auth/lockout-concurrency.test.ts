import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_WAITING } from '../../src/auth/attempt-turns.ts';
import { PASSWORD, startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';

const WRONG = 'not the password at all';
const NEW_PASSWORD = 'a brand new passphrase 42';
const BURST = 39;

/** How many replies had each status, e.g. { 401: 5, 429: 34 }. */
function tally(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

/**
 * Issue 31, A2: the lock was read before bcrypt and the failure recorded
 * after, so wrong passwords sent at once were all checked (39 x 401, then the
 * right one: 200). An attempt is now taken before bcrypt, atomically with the
 * lock check: however many arrive at once, at most the lock's allowance
 * (AUTH_LOCKOUT_FAILURES, 5) are checked, the rest are refused with the lock's
 * 429 before any bcrypt work, and the right password is refused once locked.
 * In one process the extra attempts first wait their turn (attempt-turns.ts);
 * past MAX_WAITING they meet the database's count alone, as they would on
 * several replicas, and one test goes that far. A bcrypt cost above the
 * tests' usual 4 (10: tens of ms) widens the window the defects needed.
 */
for (const kind of DB_KINDS) {
  describe(`wrong passwords sent at once never exceed the lock's allowance (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_LOGIN: '10000/300', AUTH_BCRYPT_COST: '10' });
    });
    after(() => auth.close());

    const login = (email: string, password: string) =>
      auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.21' } });

    test(`POST /v1/login: ${BURST} wrong passwords at once, then the right one`, async () => {
      const { email } = await auth.verifiedAccount();
      const burst = await Promise.all(Array.from({ length: BURST }, () => login(email, WRONG)));
      assert.deepEqual(tally(burst.map((r) => r.status)), { 401: 5, 429: BURST - 5 });
      for (const r of burst.filter((x) => x.status === 429)) assert.equal(r.body.code, 'account_locked');
      const right = await login(email, PASSWORD);
      assert.equal(right.status, 429, right.text);
      assert.equal(right.body.code, 'account_locked');
      assert.equal(right.headers.get('retry-after'), String(15 * 60));
    });

    test('past the attempts waiting their turn in this process, the database count alone holds the line (as across replicas)', async () => {
      // 5 run, MAX_WAITING wait their turn (attempt-turns.ts), and the rest go straight to the count while the 5 are in bcrypt.
      const { email } = await auth.verifiedAccount();
      const n = 5 + MAX_WAITING + 31;
      const burst = await Promise.all(Array.from({ length: n }, () => login(email, WRONG)));
      assert.deepEqual(tally(burst.map((r) => r.status)), { 401: 5, 429: n - 5 });
      assert.equal((await login(email, PASSWORD)).status, 429);
    });

    test(`POST /v1/login: an unknown address answers 401 to all ${BURST}, as the contract says`, async () => {
      const burst = await Promise.all(Array.from({ length: BURST }, () => login(uniqueEmail(), WRONG)));
      assert.deepEqual(tally(burst.map((r) => r.status)), { 401: BURST });
      const email = uniqueEmail();
      const same = await Promise.all(Array.from({ length: BURST }, () => login(email, WRONG)));
      assert.deepEqual(tally(same.map((r) => r.status)), { 401: BURST });
      for (const r of same) assert.equal(r.body.code, 'invalid_credentials');
    });

    test(`POST /v1/password/change: ${BURST} wrong current passwords at once, then the right one`, async () => {
      const { email } = await auth.verifiedAccount();
      const session = await auth.login(email);
      const change = (current: string) =>
        auth.request('POST', '/v1/password/change', { token: session, body: { current_password: current, new_password: NEW_PASSWORD } });
      const burst = await Promise.all(Array.from({ length: BURST }, () => change(WRONG)));
      assert.deepEqual(tally(burst.map((r) => r.status)), { 401: 5, 429: BURST - 5 });
      for (const r of burst) assert.equal(r.body.code, r.status === 401 ? 'wrong_password' : 'account_locked');
      const right = await change(PASSWORD);
      assert.equal(right.status, 429, right.text);
      assert.equal(right.body.code, 'account_locked');
      assert.equal((await login(email, PASSWORD)).status, 429, 'sign-in is locked too');
    });

    test('a burst of right passwords all sign in (they take turns), and leave nothing counted', async () => {
      const { email } = await auth.verifiedAccount();
      const burst = await Promise.all(Array.from({ length: 12 }, () => login(email, PASSWORD)));
      assert.deepEqual(tally(burst.map((r) => r.status)), { 200: 12 });
      for (let i = 0; i < 4; i++) assert.equal((await login(email, WRONG)).status, 401, `failure ${i + 1}`);
      assert.equal((await login(email, PASSWORD)).status, 200, 'four failures after the burst do not lock');
      for (let i = 0; i < 5; i++) assert.equal((await login(email, WRONG)).status, 401, `failure ${i + 1}`);
      assert.equal((await login(email, PASSWORD)).status, 429, 'the fifth does, as before');
    });
  });

  describe(`the public sign-in page under a burst (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startOAuth(kind, { env: { AUTH_BCRYPT_COST: '7' } });
    });
    after(() => auth.close());

    /** A browser on the sign-in page of a fresh authorization request; returns a function posting the form. */
    async function loginForm() {
      const browser = new Browser(false);
      const start = await browser.request(
        `${auth.url}/oauth/authorize?${new URLSearchParams({ client_id: STATIC_CLIENT_ID, redirect_uri: STATIC_REDIRECT, response_type: 'code', scope: 'identity' })}`,
      );
      const page = await browser.request(start.location!);
      const fields = Browser.fields(page.text);
      return async (email: string, password: string) => {
        const r = await browser.request(`${auth.url}/oauth/login`, { form: { ...fields, email, password } });
        return r.status;
      };
    }

    test(`${BURST} wrong passwords at once: 5 checked, for a known and an unknown address alike; then locked`, async () => {
      const { email: known } = await auth.verifiedAccount();
      const unknown = uniqueEmail();
      const post = await loginForm();
      const [a, b] = await Promise.all(
        [known, unknown].map((email) => Promise.all(Array.from({ length: BURST }, () => post(email, WRONG)))),
      );
      assert.deepEqual(tally(a!), { 401: 5, 429: BURST - 5 });
      assert.deepEqual(tally(b!), { 401: 5, 429: BURST - 5 });
      assert.equal(await post(known, PASSWORD), 429);
    });
  });
}
