import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { purgeExpired } from '../../src/auth/purge.ts';
import { sha256 } from '../../src/platform/crypto.ts';
import { PASSWORD, startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { CHANGED_SUBJECT, changedMail, forgot, mailsTo, RESET_SUBJECT, reset, resetToken } from '../helpers/recovery.ts';

const MINUTE = 60_000;
const NEW_PASSWORD = 'a brand new passphrase 42';

for (const kind of DB_KINDS) {
  describe(`POST /v1/password/forgot (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_FORGOT: '6/3600', AUTH_LIMIT_FORGOT_PER_EMAIL: '2/3600' });
    });
    after(() => auth.close());

    test('answers the same 200 for unknown, unverified and verified addresses; only accounts get an email', async () => {
      const unknown = uniqueEmail();
      const unverified = await auth.register();
      const verified = (await auth.verifiedAccount()).email;
      const replies = [];
      for (const [i, email] of [unknown, unverified, verified].entries()) replies.push(await forgot(auth, email, `198.51.100.${30 + i}`));
      for (const r of replies) {
        assert.equal(r.status, 200);
        assert.deepEqual(r.body, replies[0]!.body);
        assert.equal(r.headers.get('content-type'), replies[0]!.headers.get('content-type'));
      }
      assert.equal((await mailsTo(auth, unknown, RESET_SUBJECT)).length, 0);
      assert.equal((await mailsTo(auth, unverified, RESET_SUBJECT)).length, 1);
      assert.equal((await mailsTo(auth, verified, RESET_SUBJECT)).length, 1);
    });

    test('the email carries a single-use link to the built-in page, valid one hour; only its SHA-256 is stored', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email, '198.51.100.40');
      assert.match(token, /^prt_[A-Za-z0-9_-]{43}$/);
      const [mail] = await mailsTo(auth, email, RESET_SUBJECT);
      assert.ok(mail!.text.includes(`${auth.url}/reset-password?token=${token}`), mail!.text);
      assert.match(mail!.text, /expires in 60 minutes/);
      const rows = await auth.service.deps.db.selectFrom('password_reset_tokens').selectAll().execute();
      assert.ok(rows.some((r) => r.token_hash === sha256(token)));
      assert.ok(rows.every((r) => r.token_hash !== token && !r.token_hash.includes(token)));
      const outbox = await auth.service.deps.db.selectFrom('outbox').select('kind').where('recipient', '=', email).execute();
      assert.ok(outbox.some((r) => r.kind === 'password_reset'), 'queued through the outbox');
    });

    test('the per-address limit applies silently: still 200, no more mail', async () => {
      const { email } = await auth.verifiedAccount();
      for (let i = 0; i < 4; i++) assert.equal((await forgot(auth, email, `198.51.100.${50 + i}`)).status, 200);
      assert.equal((await mailsTo(auth, email, RESET_SUBJECT)).length, 2);
    });

    test('the per-IP limit applies silently across addresses', async () => {
      const emails = [];
      for (let i = 0; i < 7; i++) emails.push((await auth.verifiedAccount()).email);
      for (const email of emails) assert.equal((await forgot(auth, email, '198.51.100.60')).status, 200);
      const sent = [];
      for (const email of emails) sent.push((await mailsTo(auth, email, RESET_SUBJECT)).length);
      assert.deepEqual(sent, [1, 1, 1, 1, 1, 1, 0]);
    });

    test('an impossible address is 400 invalid_email; a missing ip is 400 naming the field', async () => {
      const r = await forgot(auth, 'not-an-address');
      assert.equal(r.status, 400);
      assert.equal(r.body.code, 'invalid_email');
      const noIp = await auth.request('POST', '/v1/password/forgot', { body: { email: 'x@example.com' } });
      assert.equal(noIp.status, 400);
      assert.equal(noIp.body.errors[0].field, 'ip');
      const badIp = await forgot(auth, 'x@example.com', 'not an ip');
      assert.equal(badIp.body.code, 'invalid_ip');
    });

    test('every recovery route requires X-Api-Key', async () => {
      for (const path of ['/v1/password/forgot', '/v1/password/reset', '/v1/password/change']) {
        const r = await auth.request('POST', path, { key: false, body: {} });
        assert.equal(r.status, 401, path);
        assert.equal(r.body.code, 'invalid_api_key');
      }
    });
  });

  describe(`POST /v1/password/reset (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_FORGOT_PER_EMAIL: '100/3600', AUTH_LIMIT_FORGOT: '1000/3600', AUTH_LIMIT_LOGIN: '1000/300' });
    });
    after(() => auth.close());

    const loginStatus = async (email: string, password: string) =>
      (await auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.9' } })).status;

    test('sets the new password and signs out every session; the old password stops working', async () => {
      const { email } = await auth.verifiedAccount();
      const sessions = [await auth.login(email), await auth.login(email)];
      const token = await resetToken(auth, email);
      const r = await reset(auth, token, NEW_PASSWORD);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.user.email, email);
      for (const s of sessions) assert.equal((await auth.request('GET', '/v1/me', { token: s })).status, 401);
      assert.equal(await loginStatus(email, PASSWORD), 401);
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);
    });

    test('emails "your password was changed" without any token or link', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email);
      assert.equal((await reset(auth, token, NEW_PASSWORD)).status, 200);
      const mail = await changedMail(auth, email);
      assert.equal(mail.subject, CHANGED_SUBJECT);
      assert.match(mail.text, /was reset/);
      assert.ok(!mail.text.includes(token));
      assert.ok(!/prt_|https?:\/\//.test(mail.text), mail.text);
    });

    test('a link works once: the second use is 409 token_used', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email);
      assert.equal((await reset(auth, token, NEW_PASSWORD)).status, 200);
      const again = await reset(auth, token, 'yet another passphrase 43');
      assert.equal(again.status, 409);
      assert.equal(again.body.code, 'token_used');
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);
    });

    test('a link older than an hour is 410 token_expired and the password is unchanged; just inside it works', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email);
      auth.clock.advance(60 * MINUTE + 1000);
      const r = await reset(auth, token, NEW_PASSWORD);
      assert.equal(r.status, 410);
      assert.equal(r.body.code, 'token_expired');
      assert.equal(await loginStatus(email, PASSWORD), 200);

      const fresh = await resetToken(auth, email);
      auth.clock.advance(59 * MINUTE);
      assert.equal((await reset(auth, fresh, NEW_PASSWORD)).status, 200);
    });

    test('a new request invalidates the earlier unused link (400 invalid_token); the newest works', async () => {
      const { email } = await auth.verifiedAccount();
      const first = await resetToken(auth, email);
      const second = await resetToken(auth, email);
      assert.notEqual(first, second);
      const old = await reset(auth, first, NEW_PASSWORD);
      assert.equal(old.status, 400);
      assert.equal(old.body.code, 'invalid_token');
      assert.equal((await reset(auth, second, NEW_PASSWORD)).status, 200);
    });

    test('an unknown token is 400 invalid_token', async () => {
      for (const token of ['prt_unknown', `prt_${'A'.repeat(43)}`, '']) {
        const r = await reset(auth, token, NEW_PASSWORD);
        assert.equal(r.status, 400);
        assert.equal(r.body.code, 'invalid_token');
      }
    });

    test('a password against the rules is 400 naming the field, and leaves the link usable', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email);
      const short = await reset(auth, token, 'too short');
      assert.equal(short.status, 400);
      assert.equal(short.body.code, 'password_too_short');
      assert.equal(short.body.errors[0].field, 'password');
      const long = await reset(auth, token, 'x'.repeat(257));
      assert.equal(long.body.code, 'password_too_long');
      const wrongType = await reset(auth, token, 123);
      assert.equal(wrongType.body.code, 'validation_failed');
      assert.equal((await reset(auth, token, NEW_PASSWORD)).status, 200);
    });

    test('clears the lockout', async () => {
      const { email } = await auth.verifiedAccount();
      for (let i = 0; i < 5; i++) assert.equal(await loginStatus(email, 'wrong password guess'), 401);
      assert.equal(await loginStatus(email, PASSWORD), 429, 'locked');
      const token = await resetToken(auth, email);
      assert.equal((await reset(auth, token, NEW_PASSWORD)).status, 200);
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);
      const row = await auth.service.deps.db
        .selectFrom('users')
        .select(['failed_logins', 'locked_until'])
        .where('email', '=', email)
        .executeTakeFirstOrThrow();
      assert.equal(row.failed_logins, 0);
      assert.equal(row.locked_until, null);
    });

    test('verifies the address of an unverified account (the link proved control of it)', async () => {
      const email = await auth.register();
      assert.equal(await loginStatus(email, PASSWORD), 403);
      const token = await resetToken(auth, email);
      const r = await reset(auth, token, NEW_PASSWORD);
      assert.equal(r.status, 200);
      assert.equal(r.body.user.email_verified, true);
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);
    });

    test('the purge removes used and expired links', async () => {
      const { email } = await auth.verifiedAccount();
      const used = await resetToken(auth, email);
      assert.equal((await reset(auth, used, NEW_PASSWORD)).status, 200);
      const other = (await auth.verifiedAccount()).email;
      const expired = await resetToken(auth, other);
      auth.clock.advance(30 * MINUTE);
      const late = await resetToken(auth, (await auth.verifiedAccount()).email);
      auth.clock.advance(31 * MINUTE);
      await purgeExpired(auth.service.deps);
      const left = new Set((await auth.service.deps.db.selectFrom('password_reset_tokens').select('token_hash').execute()).map((r) => r.token_hash));
      assert.ok(!left.has(sha256(used)) && !left.has(sha256(expired)));
      assert.ok(left.has(sha256(late)), 'a link within its hour stays');
    });
  });
}
