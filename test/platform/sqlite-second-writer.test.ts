import assert from 'node:assert/strict';
import { once } from 'node:events';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import type { Kysely } from 'kysely';
import { openDatabase } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';

interface Tables {
  notes: { id: string };
}

/** Another thread's connection to the file (as the gateway's usage thread has) inserting one row; resolves once it committed. */
function insertFromAnotherThread(path: string, id: string): Promise<unknown> {
  const worker = new Worker(
    `const { DatabaseSync } = require('node:sqlite');
     const { workerData, parentPort } = require('node:worker_threads');
     const db = new DatabaseSync(workerData.path);
     db.exec('PRAGMA busy_timeout = 5000');
     db.prepare('INSERT INTO notes (id) VALUES (?)').run(workerData.id);
     db.close();
     parentPort.postMessage('committed');`,
    { eval: true, workerData: { path, id } },
  );
  return once(worker, 'message');
}

describe('SQLite with a second writer on the file', () => {
  let database: TestDatabase;
  let db: Kysely<Tables>;
  let path: string;
  before(async () => {
    database = await freshDatabase('sqlite');
    path = join(database.dataDir, 'fixture.sqlite');
    db = (await openDatabase<Tables>({ url: undefined, sqlitePath: path })).db;
    await db.schema.createTable('notes').addColumn('id', 'text', (c) => c.primaryKey()).execute();
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });

  test('a transaction that read before the other writer committed still writes (it holds the write lock from its start)', async () => {
    let other: Promise<unknown> | undefined;
    await db.transaction().execute(async (trx) => {
      await trx.selectFrom('notes').selectAll().execute();
      other = insertFromAnotherThread(path, 'theirs');
      // Begun DEFERRED, the other thread would commit now, and the insert below fail with SQLITE_BUSY (a stale snapshot).
      // Begun IMMEDIATE, the other thread waits for this commit.
      const committed = await Promise.race([other.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 1000))]);
      assert.equal(committed, false, 'the other writer waited for this transaction');
      await trx.insertInto('notes').values({ id: 'ours' }).execute();
    });
    await other;
    const ids = (await db.selectFrom('notes').select('id').orderBy('id').execute()).map((r) => r.id);
    assert.deepEqual(ids, ['ours', 'theirs']);
  });
});
