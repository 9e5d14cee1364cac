import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';

const MINUTE = 60_000;

for (const kind of DB_KINDS) {
  describe(`POST /v1/login (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_LOGIN: '1000/300' });
    });
    after(() => auth.close());

    const login = (email: string, password: string, extra: Record<string, string> = {}) =>
      auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.20', ...extra } });

    test('the right password on a verified account opens a 30-day session', async () => {
      const { email } = await auth.verifiedAccount();
      const r = await login(` ${email.toUpperCase()} `, PASSWORD);
      assert.equal(r.status, 200);
      assert.equal(r.body.user.email, email);
      assert.match(r.body.session_token, /^ses_[A-Za-z0-9_-]{43}$/);
      assert.equal(Date.parse(r.body.expires_at), auth.clock.now() + 30 * 24 * 60 * MINUTE);
      const me = await auth.request('GET', '/v1/me', { token: r.body.session_token });
      assert.equal(me.status, 200);
      assert.equal(me.body.user.email, email);
    });

    test('a "New sign-in" email is queued with time, IP and user agent', async () => {
      const { email } = await auth.verifiedAccount();
      const r = await login(email, PASSWORD, { ip: '2001:db8::42', user_agent: 'TestBrowser/1.0' });
      assert.equal(r.status, 200);
      const mail = await auth.smtp.waitFor((m) => m.to.includes(email) && m.subject.startsWith('New sign-in'));
      assert.match(mail.text, /IP address: 2001:db8::42/);
      assert.match(mail.text, /Device: TestBrowser\/1\.0/);
      assert.match(mail.text, new RegExp(new Date(auth.clock.now()).toUTCString().slice(0, 16)));
    });

    test('a wrong password and an unknown email both answer 401 invalid_credentials', async () => {
      const { email } = await auth.verifiedAccount();
      for (const [e, p] of [[email, 'wrong password here'], [uniqueEmail(), PASSWORD]] as const) {
        const r = await login(e, p);
        assert.equal(r.status, 401);
        assert.equal(r.body.code, 'invalid_credentials');
        assert.equal(r.body.detail, 'The email address or password is wrong.');
      }
    });

    test('the whole password counts, past bcrypt\'s 72 bytes', async () => {
      const email = uniqueEmail();
      const long = `${'x'.repeat(100)}-end`;
      assert.equal((await auth.request('POST', '/v1/register', { body: { email, password: long, ip: '198.51.100.1' } })).status, 201);
      const user = await auth.service.deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
      await auth.service.deps.db.updateTable('users').set({ email_verified_at: auth.clock.now() }).where('id', '=', user.id).execute();
      assert.equal((await login(email, `${'x'.repeat(100)}-END`)).status, 401);
      assert.equal((await login(email, long)).status, 200);
    });

    test('the right password on an unverified account is 403 email_not_verified', async () => {
      const email = await auth.register();
      const r = await login(email, PASSWORD);
      assert.equal(r.status, 403);
      assert.equal(r.body.code, 'email_not_verified');
      const wrong = await login(email, 'not the password!');
      assert.equal(wrong.status, 401, 'a wrong password says nothing about verification');
    });

    test('5 consecutive failures lock the account for 15 minutes, even for the right password', async () => {
      const { email } = await auth.verifiedAccount();
      for (let i = 0; i < 5; i++) assert.equal((await login(email, 'wrong password here')).status, 401, `failure ${i + 1}`);
      const locked = await login(email, PASSWORD);
      assert.equal(locked.status, 429);
      assert.equal(locked.body.code, 'account_locked');
      assert.equal(locked.headers.get('retry-after'), String(15 * 60));

      auth.clock.advance(14 * MINUTE);
      const still = await login(email, PASSWORD);
      assert.equal(still.status, 429);
      assert.equal(still.headers.get('retry-after'), '60');

      auth.clock.advance(MINUTE + 1);
      assert.equal((await login(email, PASSWORD)).status, 200, 'unlocked after 15 minutes');
    });

    test('a success resets the failure count', async () => {
      const { email } = await auth.verifiedAccount();
      for (let i = 0; i < 4; i++) await login(email, 'wrong password here');
      assert.equal((await login(email, PASSWORD)).status, 200);
      for (let i = 0; i < 4; i++) assert.equal((await login(email, 'wrong password here')).status, 401);
      assert.equal((await login(email, PASSWORD)).status, 200, 'four more failures do not lock');
    });

    test('concurrent wrong guesses are all counted', async () => {
      const { email } = await auth.verifiedAccount();
      await Promise.all(Array.from({ length: 5 }, () => login(email, 'wrong password here')));
      assert.equal((await login(email, PASSWORD)).status, 429);
    });
  });

  describe(`login rate limit (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_LOGIN: '3/300' });
    });
    after(() => auth.close());

    test('the per-IP bucket answers 429 with Retry-After, whatever the account', async () => {
      for (let i = 0; i < 3; i++) {
        const r = await auth.request('POST', '/v1/login', { body: { email: uniqueEmail(), password: PASSWORD, ip: '192.0.2.9' } });
        assert.equal(r.status, 401);
      }
      const r = await auth.request('POST', '/v1/login', { body: { email: uniqueEmail(), password: PASSWORD, ip: '192.0.2.9' } });
      assert.equal(r.status, 429);
      assert.equal(r.body.code, 'rate_limited');
      assert.ok(Number(r.headers.get('retry-after')) > 0);
      const other = await auth.request('POST', '/v1/login', { body: { email: uniqueEmail(), password: PASSWORD, ip: '192.0.2.10' } });
      assert.equal(other.status, 401);
    });
  });
}
