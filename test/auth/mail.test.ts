import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { createAuthService } from '../../src/auth/service.ts';
import { backoffDelay } from '../../src/platform/mail.ts';
import { API_KEY, startTestAuth, type TestAuth, tokenFromMail, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { CERT_FILE, firstLink, startSmtpServer } from '../helpers/smtp.ts';

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
async function waitUntil<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function outboxRow(auth: TestAuth, email: string) {
  return auth.service.deps.db.selectFrom('outbox').selectAll().where('recipient', '=', email).executeTakeFirstOrThrow();
}

/** The outbox row of `email` once the worker has tried it at least `attempts` times. */
function afterAttempts(auth: TestAuth, email: string, attempts: number) {
  return waitUntil(`attempt ${attempts} for ${email}`, async () => {
    const row = await outboxRow(auth, email);
    return row.attempts >= attempts && row.lease_until === null ? row : undefined;
  });
}

const HOUR = 3_600_000;

for (const kind of DB_KINDS) {
  describe(`verification email over SMTP (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind);
    });
    after(() => auth.close());

    test('registering sends the email over STARTTLS, from SMTP_FROM, and its link verifies the account', async () => {
      const email = await auth.register();
      const mail = await auth.verificationMail(email);
      assert.equal(mail.secure, true, 'the connection was upgraded with STARTTLS');
      assert.deepEqual(mail.to, [email]);
      assert.match(mail.raw, /^From: Accounts <accounts@example\.com>\r?$/m);
      assert.equal(mail.subject, 'Confirm your email address');
      const link = new URL(firstLink(mail));
      assert.equal(link.pathname, '/verify');
      const token = tokenFromMail(mail);
      assert.match(token, /^vt_[A-Za-z0-9_-]{43}$/);
      const r = await auth.request('POST', '/v1/verify', { body: { token } });
      assert.equal(r.status, 200);
      assert.equal(r.body.user.email, email);
      assert.equal(r.body.user.email_verified, true);
      const row = await outboxRow(auth, email);
      assert.equal(row.status, 'sent');
      assert.equal(row.attempts, 1);
      assert.equal(row.last_error, null);
    });

    test('an SMTP outage loses nothing: the row waits out its backoff, then the email is sent', async () => {
      auth.smtp.failing = true;
      const email = uniqueEmail();
      try {
        await auth.register(email);
        const row = await afterAttempts(auth, email, 1);
        assert.equal(row.status, 'pending');
        assert.match(row.last_error ?? '', /451|Try again later/);
        assert.ok(row.next_attempt_at > auth.clock.now(), 'the retry is scheduled in the future');
      } finally {
        auth.smtp.failing = false;
      }
      await auth.service.mailWorker.stop(); // from here on only this test drives the worker
      try {
        assert.equal(await auth.service.mailWorker.drain(), 0, 'nothing is due before the backoff elapses');
        assert.ok(!auth.smtp.received.some((m) => m.to.includes(email)));
        auth.clock.advance(backoffDelay(1, 30_000, HOUR, () => 1) + 1);
        assert.equal(await auth.service.mailWorker.drain(), 1);
        const mail = await auth.verificationMail(email);
        assert.equal(mail.secure, true);
        const row = await outboxRow(auth, email);
        assert.equal(row.status, 'sent');
        assert.equal(row.attempts, 2);
        assert.equal(row.last_error, null);
      } finally {
        auth.service.mailWorker.start();
      }
    });
  });

  describe(`AUTH_VERIFY_URL (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_VERIFY_URL: 'https://app.example/verify?t={token}' });
    });
    after(() => auth.close());

    test('the email links to the template with the token in place of {token}', async () => {
      const email = await auth.register();
      const mail = await auth.verificationMail(email);
      const link = firstLink(mail);
      const m = /^https:\/\/app\.example\/verify\?t=(vt_[A-Za-z0-9_-]{43})$/.exec(link);
      assert.ok(m, `unexpected link ${link}`);
      const r = await auth.request('POST', '/v1/verify', { body: { token: m[1] } });
      assert.equal(r.status, 200);
      assert.equal(r.body.user.email_verified, true);
    });
  });

  describe(`outbox across a restart (${kind})`, () => {
    test('mail queued by a process that stopped before sending is sent by the next one', async () => {
      const auth = await startTestAuth(kind);
      let second: Awaited<ReturnType<typeof createAuthService>> | undefined;
      try {
        await auth.service.mailWorker.stop();
        const email = await auth.register();
        assert.equal((await outboxRow(auth, email)).status, 'pending');
        await auth.service.close();
        assert.ok(!auth.smtp.received.some((m) => m.to.includes(email)));

        const config = loadAuthConfig({
          DATA_DIR: auth.database.dataDir,
          ...(auth.database.url ? { AUTH_DATABASE_URL: auth.database.url } : {}),
          AUTH_API_KEY: API_KEY,
          AUTH_BCRYPT_COST: '4',
          LOG_LEVEL: 'silent',
          SMTP_HOST: 'localhost',
          SMTP_PORT: String(auth.smtp.port),
          SMTP_TLS_CA: CERT_FILE,
          SMTP_FROM: 'Accounts <accounts@example.com>',
          AUTH_MAIL_POLL_MS: '50',
        });
        second = await createAuthService(config, { clock: auth.clock, processMetrics: false });
        second.startWorkers();
        const mail = await auth.verificationMail(email);
        assert.equal(mail.secure, true);
        // The restarted service also honours the token: the row and the email agree.
        await second.app.listen({ host: '127.0.0.1', port: 0 });
        const { port } = second.app.server.address() as AddressInfo;
        const res = await fetch(`http://127.0.0.1:${port}/v1/verify`, {
          method: 'POST',
          headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' },
          body: JSON.stringify({ token: tokenFromMail(mail) }),
        });
        assert.equal(res.status, 200);
      } finally {
        await second?.close();
        await auth.smtp.close();
        await auth.database.drop();
      }
    });
  });

  describe(`shutdown with a backlog (${kind})`, () => {
    test('stopping finishes the send under way and releases the rest at once, for another replica or the next start', async () => {
      const smtp = await startSmtpServer({ delayMs: 100 });
      const auth = await startTestAuth(kind, { AUTH_LIMIT_REGISTER: '100/3600' }, smtp);
      try {
        await auth.service.mailWorker.stop();
        const emails: string[] = [];
        for (let i = 0; i < 25; i++) emails.push(await auth.register());
        auth.service.mailWorker.start();
        await smtp.waitFor(() => true);
        await auth.service.mailWorker.stop();
        const rows = await auth.service.deps.db.selectFrom('outbox').select(['status', 'lease_until']).where('recipient', 'in', emails).execute();
        const sent = rows.filter((r) => r.status === 'sent').length;
        assert.ok(sent >= 1 && sent <= 3, `the stop waited for the send under way only (${sent} of 25 sent)`);
        assert.deepEqual(
          rows.filter((r) => r.status === 'pending').map((r) => r.lease_until),
          Array(25 - sent).fill(null),
          'the unsent rows are free for the next worker now, not after their lease',
        );
      } finally {
        await auth.close();
        await smtp.close();
      }
    });
  });

  describe(`permanent failure (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_MAIL_MAX_ATTEMPTS: '3' });
    });
    after(() => auth.close());

    test('after AUTH_MAIL_MAX_ATTEMPTS failed attempts the row is failed, counted once, and never retried', async () => {
      auth.smtp.failing = true;
      const email = await auth.register();
      await afterAttempts(auth, email, 1);
      await auth.service.mailWorker.stop();
      for (const attempt of [2, 3]) {
        auth.clock.advance(2 * HOUR); // beyond the largest possible backoff (1 h cap + 20 %)
        assert.equal(await auth.service.mailWorker.drain(), 1, `attempt ${attempt}`);
      }
      let row = await outboxRow(auth, email);
      assert.equal(row.status, 'failed');
      assert.equal(row.attempts, 3);
      assert.ok(row.last_error);

      auth.smtp.failing = false;
      auth.clock.advance(2 * HOUR);
      assert.equal(await auth.service.mailWorker.drain(), 0, 'a failed row is not tried again');
      row = await outboxRow(auth, email);
      assert.equal(row.attempts, 3);
      assert.ok(!auth.smtp.received.some((m) => m.to.includes(email)));

      const metrics = await auth.request('GET', '/metrics', { key: false });
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /^auth_mail_failed_total 1$/m);
      assert.match(metrics.text, /^auth_mail_retries_total 2$/m);
    });
  });

  describe(`SMTP server without STARTTLS (${kind})`, () => {
    test('the email is never sent in clear text; the row stays pending with the error', async () => {
      const plain = await startSmtpServer({ starttls: false });
      const auth = await startTestAuth(kind, {}, plain);
      try {
        const email = await auth.register();
        const row = await afterAttempts(auth, email, 1);
        assert.equal(row.status, 'pending');
        assert.match(row.last_error ?? '', /TLS/i);
        assert.equal(plain.received.length, 0);
      } finally {
        await auth.close();
        await plain.close();
      }
    });
  });
}
