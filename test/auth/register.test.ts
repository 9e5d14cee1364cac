import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DB_KINDS } from '../helpers/env.ts';
import { PASSWORD, startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';

for (const kind of DB_KINDS) {
  describe(`POST /v1/register (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_REGISTER: '100/3600' });
    });
    after(() => auth.close());

    test('creates an unverified account with a normalised email and answers 201', async () => {
      const r = await auth.request('POST', '/v1/register', {
        body: { email: '  Grace.Hopper@Example.COM ', password: PASSWORD, ip: '203.0.113.9' },
      });
      assert.equal(r.status, 201);
      assert.equal(r.body.user.email, 'grace.hopper@example.com');
      assert.equal(r.body.user.email_verified, false);
      assert.match(r.body.user.id, /^[0-9a-f-]{36}$/);
      assert.ok(!Number.isNaN(Date.parse(r.body.user.created_at)));
      assert.deepEqual(Object.keys(r.body.user).sort(), ['created_at', 'email', 'email_verified', 'id']);
    });

    test('the verification email is in the outbox when the 201 arrives', async () => {
      await auth.service.mailWorker.stop(); // nothing sends it: only the outbox can hold it
      try {
        const email = uniqueEmail();
        const r = await auth.request('POST', '/v1/register', { body: { email, password: PASSWORD, ip: '203.0.113.9' } });
        assert.equal(r.status, 201);
        const rows = await auth.service.deps.db.selectFrom('outbox').selectAll().where('recipient', '=', email).execute();
        assert.equal(rows.length, 1);
        assert.equal(rows[0]!.kind, 'verify_email');
        assert.equal(rows[0]!.status, 'pending');
      } finally {
        auth.service.mailWorker.start();
      }
    });

    test('stores only a bcrypt hash of the password, with the configured cost', async () => {
      const email = await auth.register();
      const row = await auth.service.deps.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow();
      assert.match(row.password_hash, /^\$2[by]\$04\$/, 'a bcrypt hash ($2y$ is the same algorithm as $2b$) with the configured cost');
      assert.ok(!row.password_hash.includes(PASSWORD));
    });

    test('the same address in another case, spacing or Unicode form is taken: 409 email_taken', async () => {
      await auth.register('jose@example.com');
      for (const variant of ['JOSE@example.com', ' jose@EXAMPLE.com']) {
        const r = await auth.request('POST', '/v1/register', { body: { email: variant, password: PASSWORD, ip: '203.0.113.9' } });
        assert.equal(r.status, 409);
        assert.equal(r.body.code, 'email_taken');
        assert.equal(r.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      }
      // "é" precomposed (NFC) and decomposed (NFD) are the same address.
      await auth.register('ren\u00e9@example.com');
      const r = await auth.request('POST', '/v1/register', { body: { email: 'rene\u0301@example.com', password: PASSWORD, ip: '203.0.113.9' } });
      assert.equal(r.status, 409);
    });

    test('password length counts characters: 11 refused, 12 and 256 accepted, 257 refused', async () => {
      const cases: [string, number, string | null][] = [
        ['a'.repeat(11), 400, 'password_too_short'],
        ['a'.repeat(12), 201, null],
        ['é'.repeat(256), 201, null],
        ['a'.repeat(257), 400, 'password_too_long'],
        ['😀'.repeat(11), 400, 'password_too_short'], // 22 UTF-16 units but 11 characters
      ];
      for (const [password, status, code] of cases) {
        const r = await auth.request('POST', '/v1/register', { body: { email: uniqueEmail(), password, ip: '203.0.113.9' } });
        assert.equal(r.status, status, `${password.length} units`);
        if (code) {
          assert.equal(r.body.code, code);
          assert.deepEqual(r.body.errors, [{ field: 'password', message: r.body.detail }]);
        }
      }
    });

    test('invalid email addresses are refused with invalid_email', async () => {
      for (const email of ['', 'plain', 'a@b', '@example.com', 'a@@example.com', 'a b@example.com', 'a@exa mple.com', 'a\u0000@example.com', `${'x'.repeat(65)}@example.com`, 'a@-example.com', 'a..b@example.com']) {
        const r = await auth.request('POST', '/v1/register', { body: { email, password: PASSWORD, ip: '203.0.113.9' } });
        assert.equal(r.status, 400, JSON.stringify(email));
        assert.equal(r.body.code, 'invalid_email');
        assert.equal(r.body.errors[0].field, 'email');
      }
    });

    test('internationalised addresses are accepted', async () => {
      const r = await auth.request('POST', '/v1/register', { body: { email: 'Δοκιμή@Παράδειγμα.δοκιμή', password: PASSWORD, ip: '203.0.113.9' } });
      assert.equal(r.status, 201);
      assert.equal(r.body.user.email, 'δοκιμή@παράδειγμα.δοκιμή');
    });

    test('an invalid ip is refused with invalid_ip', async () => {
      for (const ip of ['', 'localhost', '300.1.1.1', '1.2.3']) {
        const r = await auth.request('POST', '/v1/register', { body: { email: uniqueEmail(), password: PASSWORD, ip } });
        assert.equal(r.status, 400);
        assert.equal(r.body.code, 'invalid_ip');
      }
      const v6 = await auth.request('POST', '/v1/register', { body: { email: uniqueEmail(), password: PASSWORD, ip: '2001:db8::1' } });
      assert.equal(v6.status, 201);
    });
  });

  describe(`register rate limit (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_LIMIT_REGISTER: '2/3600' });
    });
    after(() => auth.close());

    test('the per-IP bucket answers 429 with Retry-After once exhausted, other IPs unaffected', async () => {
      await auth.register(uniqueEmail(), '192.0.2.50');
      await auth.register(uniqueEmail(), '192.0.2.50');
      const r = await auth.request('POST', '/v1/register', { body: { email: uniqueEmail(), password: PASSWORD, ip: '192.0.2.50' } });
      assert.equal(r.status, 429);
      assert.equal(r.body.code, 'rate_limited');
      const retry = Number(r.headers.get('retry-after'));
      assert.ok(retry > 3500 && retry <= 3600, `retry-after ${retry}`);
      await auth.register(uniqueEmail(), '192.0.2.51');
    });
  });
}
