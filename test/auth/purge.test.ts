import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { purgeExpired } from '../../src/auth/purge.ts';
import { startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS, type DbKind } from '../helpers/env.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function withAuth(kind: DbKind, fn: (auth: TestAuth) => Promise<void>): Promise<void> {
  const auth = await startTestAuth(kind);
  await auth.service.purgeJob.stop(); // only the test purges
  try {
    await fn(auth);
  } finally {
    await auth.close();
  }
}

/** Waits until the worker has sent every queued email (sent_at is then the clock's current time). */
async function allMailSent(auth: TestAuth): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const pending = await auth.service.deps.db.selectFrom('outbox').select('id').where('status', '!=', 'sent').execute();
    if (pending.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${pending.length} emails still unsent`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const count = async (auth: TestAuth, table: 'sessions' | 'verification_tokens' | 'outbox') =>
  Number((await auth.service.deps.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

/** The counts of the three tables this suite fills (later features add purge targets of their own). */
async function purged(deps: TestAuth['service']['deps']) {
  const { sessions, verification_tokens, outbox } = await purgeExpired(deps);
  return { sessions, verification_tokens, outbox };
}

const me = async (auth: TestAuth, token: string) => (await auth.request('GET', '/v1/me', { token })).status;

async function userId(auth: TestAuth, email: string): Promise<string> {
  return (await auth.service.deps.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()).id;
}

/** Inserts `n` sessions of `user` expiring at `expiresAt`, in chunks. */
async function insertSessions(auth: TestAuth, user: string, n: number, expiresAt: number): Promise<void> {
  for (let done = 0; done < n; done += 500) {
    const rows = Array.from({ length: Math.min(500, n - done) }, () => ({
      id: randomUUID(),
      user_id: user,
      token_hash: randomUUID(),
      created_at: expiresAt - DAY,
      expires_at: expiresAt,
      revoked_at: null,
      ip: '192.0.2.1',
      user_agent: null,
    }));
    await auth.service.deps.db.insertInto('sessions').values(rows).execute();
  }
}

for (const kind of DB_KINDS) {
  describe(`purgeExpired (${kind})`, () => {
    test('removes revoked, expired and used rows as they become so, and keeps live ones', () =>
      withAuth(kind, async (auth) => {
        const { deps } = auth.service;
        const alice = await auth.verifiedAccount(); // her verification token is now used
        const bob = await auth.register(); // unverified: his token is live for 24 h
        const live = await auth.login(alice.email);
        const revoked = await auth.login(alice.email);
        assert.equal((await auth.request('POST', '/v1/logout', { token: revoked })).status, 204);
        await allMailSent(auth); // alice's and bob's verification, two sign-in notices

        assert.deepEqual(await purged(deps), { sessions: 1, verification_tokens: 1, outbox: 0 });
        assert.equal(await me(auth, live), 200, 'the live session still works');
        assert.equal(await count(auth, 'sessions'), 1);
        assert.equal(await count(auth, 'verification_tokens'), 1, "bob's unused token stays");
        assert.deepEqual(await purged(deps), { sessions: 0, verification_tokens: 0, outbox: 0 }, 'nothing twice');

        auth.clock.advance(DAY + HOUR); // bob's token has expired; the session has not
        const carol = await auth.register();
        await allMailSent(auth);
        assert.deepEqual(await purged(deps), { sessions: 0, verification_tokens: 1, outbox: 0 });
        const tokens = await deps.db.selectFrom('verification_tokens').innerJoin('users', 'users.id', 'user_id').select('email').execute();
        assert.deepEqual(tokens.map((t) => t.email), [carol]);
        assert.equal(await me(auth, live), 200);
        assert.notEqual(bob, carol);

        auth.clock.advance(6 * DAY + 23 * HOUR); // 8 days in: the day-one emails are over a week old, carol's is not
        assert.deepEqual(await purged(deps), { sessions: 0, verification_tokens: 1, outbox: 4 });
        const mail = await deps.db.selectFrom('outbox').select('recipient').execute();
        assert.deepEqual(mail.map((m) => m.recipient), [carol]);

        auth.clock.advance(23 * DAY); // past the 30-day session lifetime
        assert.equal(await me(auth, live), 401);
        assert.deepEqual(await purged(deps), { sessions: 1, verification_tokens: 0, outbox: 1 });
        assert.equal(await count(auth, 'sessions'), 0);
      }));

    test('failed emails are kept 30 days for a human to look at', () =>
      withAuth(kind, async (auth) => {
        const { db } = auth.service.deps;
        const now = auth.clock.now();
        const row = { kind: 'test', subject: 's', text_body: 't', status: 'failed' as const, attempts: 10 };
        await db
          .insertInto('outbox')
          .values([
            { ...row, id: randomUUID(), recipient: 'old@example.com', next_attempt_at: now, created_at: now - 31 * DAY },
            { ...row, id: randomUUID(), recipient: 'recent@example.com', next_attempt_at: now, created_at: now - 29 * DAY },
            { ...row, id: randomUUID(), recipient: 'pending@example.com', status: 'pending', next_attempt_at: now + DAY, created_at: now - 60 * DAY },
          ])
          .execute();
        assert.equal((await purgeExpired(auth.service.deps)).outbox, 1);
        const left = await db.selectFrom('outbox').select('recipient').orderBy('recipient').execute();
        assert.deepEqual(left.map((m) => m.recipient), ['pending@example.com', 'recent@example.com']);
      }));

    test('removes every expired row of a large backlog, beyond one batch of 1000', () =>
      withAuth(kind, async (auth) => {
        const email = await auth.register(uniqueEmail());
        const user = await userId(auth, email);
        const now = auth.clock.now();
        await insertSessions(auth, user, 2500, now - 1);
        await insertSessions(auth, user, 7, now + DAY);
        const removed = await purgeExpired(auth.service.deps);
        assert.equal(removed['sessions'], 2500);
        assert.equal(await count(auth, 'sessions'), 7);
        const metrics = await auth.request('GET', '/metrics', { key: false });
        assert.match(metrics.text, /^auth_purged_rows_total\{table="sessions"\} 2500$/m);
      }));

    test("the service's purge job purges once per interval", () =>
      withAuth(kind, async (auth) => {
        const email = await auth.register(uniqueEmail());
        const user = await userId(auth, email);
        await insertSessions(auth, user, 3, auth.clock.now() - 1);
        assert.equal(await auth.service.purgeJob.runOnce(), true);
        assert.equal(await count(auth, 'sessions'), 0);

        await insertSessions(auth, user, 2, auth.clock.now() - 1);
        assert.equal(await auth.service.purgeJob.runOnce(), false, 'not again within the interval');
        assert.equal(await count(auth, 'sessions'), 2);
        auth.clock.advance(60 * 60_000); // AUTH_PURGE_INTERVAL_MINUTES defaults to 60
        assert.equal(await auth.service.purgeJob.runOnce(), true);
        assert.equal(await count(auth, 'sessions'), 0);
        const metrics = await auth.request('GET', '/metrics', { key: false });
        assert.match(metrics.text, /^auth_purged_rows_total\{table="sessions"\} 5$/m);
      }));
  });
}
