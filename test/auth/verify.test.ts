import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, startTestAuth, type TestAuth, tokenFromMail, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';

const HOUR = 3_600_000;

for (const kind of DB_KINDS) {
  describe(`email verification (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind);
    });
    after(() => auth.close());

    const verify = (token: unknown) => auth.request('POST', '/v1/verify', { body: { token } });
    const isVerified = async (email: string) => {
      const row = await auth.service.deps.db.selectFrom('users').select('email_verified_at').where('email', '=', email).executeTakeFirstOrThrow();
      return row.email_verified_at !== null;
    };

    test('the emailed token verifies the account once (unverified -> verified); a second use is 409 token_used', async () => {
      const email = await auth.register();
      const token = tokenFromMail(await auth.verificationMail(email));
      assert.match(token, /^vt_[A-Za-z0-9_-]{43}$/);
      const first = await verify(token);
      assert.equal(first.status, 200);
      assert.equal(first.body.user.email, email);
      assert.equal(first.body.user.email_verified, true);
      const second = await verify(token);
      assert.equal(second.status, 409);
      assert.equal(second.body.code, 'token_used');
    });

    test('only the token hash is stored', async () => {
      const email = await auth.register();
      const token = tokenFromMail(await auth.verificationMail(email));
      const rows = await auth.service.deps.db.selectFrom('verification_tokens').select('token_hash').execute();
      assert.ok(rows.every((r) => r.token_hash !== token && !r.token_hash.includes(token)));
    });

    test('an unknown token is 400 invalid_token', async () => {
      const r = await verify('vt_notarealtoken');
      assert.equal(r.status, 400);
      assert.equal(r.body.code, 'invalid_token');
    });

    test('a token older than 24 hours is 410 token_expired and the account stays unverified', async () => {
      const email = await auth.register();
      const token = tokenFromMail(await auth.verificationMail(email));
      auth.clock.advance(24 * HOUR + 1000);
      const r = await verify(token);
      assert.equal(r.status, 410);
      assert.equal(r.body.code, 'token_expired');
      assert.equal(await isVerified(email), false);
    });

    test('a token just inside its 24 hours still works', async () => {
      const email = await auth.register();
      const token = tokenFromMail(await auth.verificationMail(email));
      auth.clock.advance(24 * HOUR - 60_000);
      assert.equal((await verify(token)).status, 200);
      assert.equal(await isVerified(email), true);
    });
  });

  describe(`POST /v1/resend-verification (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_RESEND_PER_EMAIL: '2/3600' });
    });
    after(() => auth.close());

    const resend = (email: string, ip = '198.51.100.77') => auth.request('POST', '/v1/resend-verification', { body: { email, ip } });

    test('answers the same 200 for unknown, verified and unverified addresses', async () => {
      const unverified = await auth.register();
      const verified = (await auth.verifiedAccount()).email;
      const replies = await Promise.all([resend(uniqueEmail()), resend(verified), resend(unverified)]);
      for (const r of replies) assert.equal(r.status, 200);
      assert.deepEqual(replies[0]!.body, replies[1]!.body);
      assert.deepEqual(replies[1]!.body, replies[2]!.body);
    });

    test('sends a fresh working token only to an existing unverified account', async () => {
      const email = await auth.register();
      await auth.verificationMail(email);
      await resend(email);
      const mails = await waitForCount(auth, email, 2);
      const fresh = tokenFromMail(mails[1]!);
      assert.notEqual(fresh, tokenFromMail(mails[0]!));
      assert.equal((await auth.request('POST', '/v1/verify', { body: { token: fresh } })).status, 200);

      const before = auth.smtp.received.length;
      await resend(email); // now verified: nothing is sent
      await resend(uniqueEmail());
      await auth.service.mailWorker.drain();
      assert.equal(auth.smtp.received.length, before);
    });

    test('the per-address limit applies silently: still 200, no more mail', async () => {
      const email = await auth.register();
      await auth.verificationMail(email);
      for (let i = 0; i < 4; i++) assert.equal((await resend(email)).status, 200);
      await auth.service.mailWorker.drain();
      const count = auth.smtp.received.filter((m) => m.to.includes(email)).length;
      assert.equal(count, 3, 'the registration email and 2 resends');
    });

    test('an invalid address is 400 invalid_email', async () => {
      const r = await resend('not-an-address');
      assert.equal(r.status, 400);
      assert.equal(r.body.code, 'invalid_email');
      const password = await auth.request('POST', '/v1/resend-verification', { body: { email: 'x@example.com', password: PASSWORD } });
      assert.equal(password.status, 400);
      assert.equal(password.body.errors[0].field, 'ip');
    });
  });
}

async function waitForCount(auth: TestAuth, email: string, n: number) {
  for (let i = 0; i < 100; i++) {
    const mails = auth.smtp.received.filter((m) => m.to.includes(email));
    if (mails.length >= n) return mails;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`fewer than ${n} mails to ${email}`);
}
