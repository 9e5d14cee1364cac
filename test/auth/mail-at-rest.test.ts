import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { type AuthService, createAuthService } from '../../src/auth/service.ts';
import { openBody } from '../../src/platform/mail.ts';
import { API_KEY, startTestAuth, type TestAuth, tokenFromMail, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { CERT_FILE, firstLink } from '../helpers/smtp.ts';

const HOUR = 3_600_000;

/**
 * Defect 9: a pending or failed verification email kept its link in plaintext
 * in the outbox, so a database dump yielded live tokens. Bodies are sealed
 * with AES-256-GCM under AUTH_ENCRYPTION_KEY, bound to their row; a failed
 * email keeps no body.
 */
for (const kind of DB_KINDS) {
  describe(`email bodies at rest in the outbox (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind, { AUTH_MAIL_MAX_ATTEMPTS: '2' });
      await auth.service.mailWorker.stop(); // each test drives the worker itself
    });
    after(() => auth.close());

    const rows = (email: string) => auth.service.deps.db.selectFrom('outbox').selectAll().where('recipient', '=', email).execute();

    test('a pending verification email holds no token in the database, and still arrives with a working link', async () => {
      auth.smtp.failing = true;
      const email = await auth.register();
      await auth.service.mailWorker.drain();
      const [pending] = await rows(email);
      assert.equal(pending?.status, 'pending');
      assert.equal(pending.attempts, 1, 'one attempt failed, the row waits for the next');

      auth.smtp.failing = false;
      auth.clock.advance(2 * HOUR);
      await auth.service.mailWorker.drain();
      const mail = await auth.verificationMail(email);
      const token = tokenFromMail(mail);
      // What a dump taken while the email waited would have held:
      const dumped = JSON.stringify(pending);
      assert.ok(!dumped.includes(token), 'the token is not in the row');
      assert.ok(!dumped.includes(encodeURIComponent(token)), 'nor URL-encoded');
      assert.ok(!dumped.includes(new URL(firstLink(mail)).pathname + '?'), 'nor the link');
      assert.match(pending.text_body, /^aes256gcm:[A-Za-z0-9_-]+$/);
      assert.equal(openBody([auth.service.deps.config.encryptionKey], pending.id, 'text', pending.text_body), mail.text.trimEnd());

      const verified = await auth.request('POST', '/v1/verify', { body: { token } });
      assert.equal(verified.status, 200);
      assert.equal(verified.body.user.email_verified, true);
    });

    test('a failed verification email keeps its envelope and error, and no body', async () => {
      auth.smtp.failing = true;
      try {
        const email = await auth.register();
        await auth.service.mailWorker.drain();
        auth.clock.advance(2 * HOUR);
        await auth.service.mailWorker.drain();
        const [failed] = await rows(email);
        assert.equal(failed?.status, 'failed');
        assert.equal(failed.kind, 'verify_email');
        assert.ok(failed.last_error);
        assert.equal(failed.text_body, '');
        assert.equal(failed.html_body, null);
        assert.doesNotMatch(JSON.stringify(failed), /vt_/);
      } finally {
        auth.smtp.failing = false;
      }
    });

    test('another key cannot open a body: a wrong key throws, and a body moved to another row does not open there', async () => {
      auth.smtp.failing = true;
      const [a, b] = [await auth.register(), await auth.register()];
      await auth.service.mailWorker.drain();
      auth.smtp.failing = false;
      const [rowA] = await rows(a);
      const [rowB] = await rows(b);
      const key = auth.service.deps.config.encryptionKey;
      assert.throws(() => openBody([randomBytes(32)], rowA!.id, 'text', rowA!.text_body));
      assert.throws(() => openBody([key], rowB!.id, 'text', rowA!.text_body), 'bound to its row');

      // Swap the two bodies, as someone with write access to the table might: neither email is sent.
      const { db } = auth.service.deps;
      await db.updateTable('outbox').set({ text_body: rowB!.text_body }).where('id', '=', rowA!.id).execute();
      await db.updateTable('outbox').set({ text_body: rowA!.text_body }).where('id', '=', rowB!.id).execute();
      auth.clock.advance(2 * HOUR);
      await auth.service.mailWorker.drain();
      for (const email of [a, b]) {
        const [row] = await rows(email);
        assert.equal(row?.status, 'failed', email);
        assert.equal(row.last_error, "the body does not open with this replica's encryption keys", 'its second and last attempt (AUTH_MAIL_MAX_ATTEMPTS=2)');
        assert.equal(row.text_body, '');
        assert.ok(!auth.smtp.received.some((m) => m.to.includes(email)), `nothing sent to ${email}`);
      }
    });

    test('a row written in plaintext before sealing existed is still sent', async () => {
      const email = uniqueEmail();
      await auth.service.deps.db
        .insertInto('outbox')
        .values({
          id: crypto.randomUUID(),
          kind: 'legacy',
          recipient: email,
          subject: 'Written by an earlier version',
          text_body: 'A plaintext body.',
          html_body: null,
          status: 'pending',
          attempts: 0,
          next_attempt_at: auth.clock.now(),
          created_at: auth.clock.now(),
        })
        .execute();
      await auth.service.mailWorker.drain();
      const mail = await auth.smtp.waitFor((m) => m.to.includes(email));
      assert.equal(mail.text.trimEnd(), 'A plaintext body.');
    });
  });

  describe(`a restart with another AUTH_ENCRYPTION_KEY (${kind})`, () => {
    /**
     * An email is waiting, sealed under the first key, when the service restarts with a new AUTH_ENCRYPTION_KEY
     * (and `keys`' other settings); `check` sees the restarted service after one worker pass.
     */
    async function afterRestart(
      firstKey: string,
      keys: Record<string, string>,
      check: (second: AuthService, email: string, auth: TestAuth, start: (env: Record<string, string>) => Promise<AuthService>) => Promise<void>,
    ) {
      const auth = await startTestAuth(kind, { AUTH_ENCRYPTION_KEY: firstKey });
      let second: AuthService | undefined;
      try {
        await auth.service.mailWorker.stop();
        const email = await auth.register();
        await auth.service.close();
        /** Another process of the service on the same database and SMTP server, with `env` over the defaults. */
        const start = (env: Record<string, string>) =>
          createAuthService(
            loadAuthConfig({
              DATA_DIR: auth.database.dataDir,
              ...(auth.database.url ? { AUTH_DATABASE_URL: auth.database.url } : {}),
              AUTH_API_KEY: API_KEY,
              AUTH_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
              LOG_LEVEL: 'silent',
              SMTP_HOST: 'localhost',
              SMTP_PORT: String(auth.smtp.port),
              SMTP_TLS_CA: CERT_FILE,
              ...env,
            }),
            { clock: auth.clock, processMetrics: false },
          );
        second = await start(keys);
        assert.equal(await second.mailWorker.drain(), 1);
        await check(second, email, auth, start);
      } finally {
        await second?.close();
        await auth.smtp.close();
        await auth.database.drop();
      }
    }
    const outboxRow = (service: AuthService, email: string) =>
      service.deps.db.selectFrom('outbox').selectAll().where('recipient', '=', email).executeTakeFirstOrThrow();

    test('a process without the key does not send the waiting email but leaves it, sealed, for one that has the key (a rolling key change)', async () => {
      const firstKey = randomBytes(32).toString('hex');
      await afterRestart(firstKey, {}, async (second, email, auth, start) => {
        const row = await outboxRow(second, email);
        assert.equal(row.status, 'pending', 'put back, not failed');
        assert.equal(row.attempts, 1);
        assert.match(row.text_body, /^aes256gcm:/, 'its body kept, still sealed');
        assert.match(row.last_error ?? '', /does not open/);
        assert.ok(!auth.smtp.received.some((m) => m.to.includes(email)), 'not sent');
        await second.mailWorker.stop();

        // A replica that holds the key (here the first one, started again) sends it once the backoff has passed.
        auth.clock.advance(2 * HOUR);
        const third = await start({ AUTH_ENCRYPTION_KEY: firstKey });
        try {
          assert.equal(await third.mailWorker.drain(), 1);
          const mail = await auth.smtp.waitFor((m) => m.to.includes(email));
          assert.match(tokenFromMail(mail), /^vt_/);
          assert.equal((await outboxRow(third, email)).status, 'sent');
        } finally {
          await third.close();
        }
      });
    });

    test('an email no process can open is failed and wiped once its attempts are spent, never sent', async () => {
      await afterRestart(randomBytes(32).toString('hex'), { AUTH_MAIL_MAX_ATTEMPTS: '1' }, async (second, email, auth) => {
        const row = await outboxRow(second, email);
        assert.equal(row.status, 'failed');
        assert.equal(row.text_body, '');
        assert.ok(!auth.smtp.received.some((m) => m.to.includes(email)));
      });
    });

    test('with the old key kept as AUTH_ENCRYPTION_KEY_PREVIOUS, the waiting email is sent with its working link', async () => {
      const oldKey = randomBytes(32).toString('hex');
      await afterRestart(oldKey, { AUTH_ENCRYPTION_KEY_PREVIOUS: oldKey }, async (second, email, auth) => {
        const mail = await auth.smtp.waitFor((m) => m.to.includes(email));
        assert.match(tokenFromMail(mail), /^vt_/);
        assert.equal((await outboxRow(second, email)).status, 'sent');
      });
    });
  });
}
