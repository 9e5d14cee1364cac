import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startTestAuth, tokenFromMail, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { startSmtpServer } from '../helpers/smtp.ts';

const SIGNUPS = 12;

/**
 * Issue 9, faults: the SMTP server is down (connections refused, not a 4xx)
 * while people sign up. Every signup is still a 201 (the email is in the
 * outbox, written with the account); each send fails and is retried with
 * backoff; once the server is back every verification email is delivered,
 * with a working link, and none twice.
 */
for (const kind of DB_KINDS) {
  describe(`SMTP down during signups (${kind})`, () => {
    test('every verification email is delivered once the server is back, none twice', { timeout: 60_000 }, async (t) => {
      let smtp = await startSmtpServer();
      const port = smtp.port;
      const auth = await startTestAuth(kind, { AUTH_MAIL_MAX_ATTEMPTS: '10' }, smtp);
      t.after(async () => {
        await auth.close();
        await smtp.close();
      });
      await auth.service.mailWorker.stop(); // the test drives the worker, with the service's manual clock
      await smtp.close();

      const emails: string[] = [];
      for (let i = 0; i < SIGNUPS; i++) emails.push(await auth.register(uniqueEmail()));
      for (let pass = 0; pass < 3; pass++) {
        await auth.service.mailWorker.drain();
        auth.clock.advance(60 * 60_000);
      }
      const pending = await auth.service.deps.db.selectFrom('outbox').select(['status', 'attempts']).where('recipient', 'in', emails).execute();
      assert.equal(pending.length, SIGNUPS);
      assert.ok(
        pending.every((r) => r.status === 'pending' && r.attempts >= 1),
        `kept for retry while the server is down: ${JSON.stringify(pending)}`,
      );

      smtp = await startSmtpServer({ port });
      for (let pass = 0; pass < 3; pass++) {
        await auth.service.mailWorker.drain();
        auth.clock.advance(60 * 60_000);
      }
      for (const email of emails) {
        const mails = smtp.received.filter((m) => m.to.includes(email));
        assert.equal(mails.length, 1, `exactly one email to ${email}`);
        assert.match(tokenFromMail(mails[0]!), /^vt_/);
      }
      const rows = await auth.service.deps.db.selectFrom('outbox').select('status').where('recipient', 'in', emails).execute();
      assert.ok(rows.every((r) => r.status === 'sent'));
    });
  });
}
