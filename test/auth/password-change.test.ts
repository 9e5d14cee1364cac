import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, startTestAuth, type TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { CHANGED_SUBJECT, changedMail, mailsTo, reset, resetToken } from '../helpers/recovery.ts';

const NEW_PASSWORD = 'a brand new passphrase 42';

for (const kind of DB_KINDS) {
  describe(`POST /v1/password/change (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_LOGIN: '1000/300' });
    });
    after(() => auth.close());

    const change = (token: string | undefined, current_password: unknown, new_password: unknown) =>
      auth.request('POST', '/v1/password/change', { token, body: { current_password, new_password } });
    const loginStatus = async (email: string, password: string) =>
      (await auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.9' } })).status;
    const me = async (token: string) => (await auth.request('GET', '/v1/me', { token })).status;

    test('sets the new password, keeps this session, signs out every other one, and emails without a token', async () => {
      const { email } = await auth.verifiedAccount();
      const current = await auth.login(email);
      const others = [await auth.login(email), await auth.login(email)];
      const r = await change(current, PASSWORD, NEW_PASSWORD);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.user.email, email);
      assert.equal(await me(current), 200);
      for (const s of others) assert.equal(await me(s), 401);
      assert.equal(await loginStatus(email, PASSWORD), 401);
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);

      const mail = await changedMail(auth, email);
      assert.match(mail.text, /was changed/);
      assert.ok(!/ses_|prt_|https?:\/\//.test(mail.text), mail.text);
      assert.ok(!mail.text.includes(current));
    });

    test('a wrong current password is 401 wrong_password, changes nothing and counts toward the lockout', async () => {
      const { email } = await auth.verifiedAccount();
      const session = await auth.login(email);
      const wrong = await change(session, 'not my password at all', NEW_PASSWORD);
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.code, 'wrong_password');
      assert.equal(await me(session), 200, 'the session stays');
      for (let i = 0; i < 4; i++) assert.equal((await change(session, 'still not my password', NEW_PASSWORD)).status, 401);
      // Five wrong passwords: locked, for change and for sign-in alike, the right password included.
      const locked = await change(session, PASSWORD, NEW_PASSWORD);
      assert.equal(locked.status, 429);
      assert.equal(locked.body.code, 'account_locked');
      assert.ok(Number(locked.headers.get('retry-after')) > 0);
      assert.equal(await loginStatus(email, PASSWORD), 429);
      assert.equal((await mailsTo(auth, email, CHANGED_SUBJECT)).length, 0);
    });

    test('a right password resets the failure count', async () => {
      const { email } = await auth.verifiedAccount();
      const session = await auth.login(email);
      for (let i = 0; i < 4; i++) await change(session, 'not my password at all', NEW_PASSWORD);
      assert.equal((await change(session, PASSWORD, NEW_PASSWORD)).status, 200);
      assert.equal(await loginStatus(email, 'one more wrong guess'), 401, 'a fresh count: no lock');
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);
    });

    test('a new password against the rules is 400 naming new_password, without counting a failure', async () => {
      const { email } = await auth.verifiedAccount();
      const session = await auth.login(email);
      for (let i = 0; i < 6; i++) {
        const r = await change(session, 'not my password at all', 'short');
        assert.equal(r.status, 400);
        assert.equal(r.body.code, 'password_too_short');
        assert.equal(r.body.errors[0].field, 'new_password');
      }
      assert.equal((await change(session, PASSWORD, 'y'.repeat(257))).body.code, 'password_too_long');
      assert.equal((await change(session, PASSWORD, NEW_PASSWORD)).status, 200);
    });

    test('without a live session it is 401 invalid_session', async () => {
      const { email } = await auth.verifiedAccount();
      const session = await auth.login(email);
      await auth.request('POST', '/v1/logout', { token: session });
      for (const token of [session, 'ses_unknown', undefined]) {
        const r = await change(token, PASSWORD, NEW_PASSWORD);
        assert.equal(r.status, 401);
        assert.equal(r.body.code, 'invalid_session');
      }
      assert.equal(await loginStatus(email, PASSWORD), 200, 'unchanged');
    });

    test('a change invalidates reset links sent before it', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email);
      const session = await auth.login(email);
      assert.equal((await change(session, PASSWORD, NEW_PASSWORD)).status, 200);
      const r = await reset(auth, token, 'the attacker chose this one');
      assert.equal(r.status, 400);
      assert.equal(r.body.code, 'invalid_token');
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);
    });
  });
}
