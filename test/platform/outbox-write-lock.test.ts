import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import { systemClock } from '../../src/platform/clock.ts';
import type { Kysely } from 'kysely';
import { closeDatabase, openDatabase } from '../../src/platform/db.ts';
import { enqueueEmail, type OutboxTable, type OutboxWorker, outboxMigration, outboxWorker } from '../../src/platform/mail.ts';
import { logTransport } from '../../src/platform/mail-transport.ts';
import { createMetrics } from '../../src/platform/metrics.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';

/**
 * Another connection to the file (as the gateway's usage thread has) holding
 * the write lock, from another thread, until released: what the outbox's
 * poll meets about once a second on a busy gateway.
 */
async function holdWriteLock(path: string): Promise<{ release: () => Promise<void> }> {
  const worker = new Worker(
    `const { DatabaseSync } = require('node:sqlite');
     const { workerData, parentPort } = require('node:worker_threads');
     const db = new DatabaseSync(workerData.path);
     db.exec('BEGIN IMMEDIATE');
     parentPort.postMessage('locked');
     parentPort.once('message', () => {
       db.exec('COMMIT');
       db.close();
       parentPort.postMessage('released');
     });`,
    { eval: true, workerData: { path } },
  );
  await once(worker, 'message');
  return {
    release: async () => {
      worker.postMessage('release');
      await once(worker, 'message');
      await worker.terminate();
    },
  };
}

describe('the outbox poll on SQLite, while another connection holds the write lock', () => {
  let database: TestDatabase;
  let db: Kysely<{ outbox: OutboxTable }>;
  let path: string;
  let worker: OutboxWorker;
  const logged: string[] = [];
  const key = randomBytes(32);

  before(async () => {
    database = await freshDatabase('sqlite');
    path = join(database.dataDir, 'outbox.sqlite');
    db = (await openDatabase<{ outbox: OutboxTable }>({ url: undefined, sqlitePath: path })).db;
    await outboxMigration.up(db);
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _encoding, done) {
          logged.push(String(chunk));
          done();
        },
      }),
    );
    worker = outboxWorker({
      db,
      dialect: 'sqlite',
      clock: systemClock,
      keys: [key],
      transport: logTransport(log),
      from: 'noreply@example.com',
      log,
      metrics: createMetrics('outbox_lock_test', false),
      pollMs: 60_000,
      maxAttempts: 3,
      backoffBaseMs: 1000,
      backoffCapMs: 60_000,
    });
  });
  after(async () => {
    await closeDatabase(db);
    await database.drop();
  });

  test('with nothing due, a pass neither waits for the lock nor fails (it reads, and takes the lock only to claim)', async () => {
    const lock = await holdWriteLock(path);
    try {
      const startedAt = performance.now();
      // Before the fix, the claim's UPDATE waited out the busy timeout (5 s) on the event loop, then failed SQLITE_BUSY.
      assert.equal(await worker.drain(), 0);
      const waitedMs = performance.now() - startedAt;
      assert.ok(waitedMs < 2500, `the pass took ${Math.round(waitedMs)} ms, as if it had waited for the write lock`);
      assert.ok(!logged.some((line) => line.includes('outbox pass failed')), 'the pass did not fail');
    } finally {
      await lock.release();
    }
  });

  test('an email due is still claimed and sent once the lock is free', async () => {
    await enqueueEmail(db, { clock: systemClock, key }, { kind: 'test', to: 'someone@example.com', subject: 'Hello', text: 'Due now.' });
    assert.equal(await worker.drain(), 1);
    assert.ok(logged.some((line) => line.includes('Due now.')), 'the email went to the transport');
    const [row] = await db.selectFrom('outbox').selectAll().execute();
    assert.equal(row?.status, 'sent');
  });
});
