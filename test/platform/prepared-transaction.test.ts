import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { type AnyDb, openDatabase } from '../../src/platform/db.ts';
import { preparedStatement } from '../../src/platform/prepared-statement.ts';
import { runTransaction, step } from '../../src/platform/prepared-transaction.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { DB_KINDS } from '../helpers/env.ts';

interface Tables {
  counters: { name: string; n: number };
}

const insert = preparedStatement(['name', 'n'], (db: AnyDb, p) => (db as Kysely<Tables>).insertInto('counters').values({ name: p.name, n: p.n }));
const bump = preparedStatement(['name'], (db: AnyDb, p) =>
  (db as Kysely<Tables>).updateTable('counters').set((eb) => ({ n: eb('n', '+', 1) })).where('name', '=', p.name),
);

for (const kind of DB_KINDS) {
  describe(`runTransaction: prepared statements as one transaction (${kind})`, () => {
    let database: TestDatabase;
    let db: Kysely<Tables>;
    before(async () => {
      database = await freshDatabase(kind);
      db = (await openDatabase<Tables>({ url: database.url, sqlitePath: join(database.dataDir, 'fixture.sqlite') })).db;
      await db.schema.createTable('counters').addColumn('name', 'text', (c) => c.primaryKey()).addColumn('n', 'integer', (c) => c.notNull()).execute();
    });
    after(async () => {
      await db.destroy();
      await database.drop();
    });

    const names = async () => (await db.selectFrom('counters').select('name').orderBy('name').execute()).map((r) => r.name);

    test('commits when every step changed the rows it expected', async () => {
      assert.equal(await runTransaction(db, [step(insert, { name: 'a', n: 0 }), step(bump, { name: 'a' }, 1)]), true);
      const row = await db.selectFrom('counters').selectAll().where('name', '=', 'a').executeTakeFirstOrThrow();
      assert.equal(Number(row.n), 1);
    });

    test('a step that changed another number of rows rolls back the steps before it', async () => {
      assert.equal(await runTransaction(db, [step(insert, { name: 'b', n: 0 }), step(bump, { name: 'nobody' }, 1)]), false);
      assert.deepEqual(await names(), ['a']);
    });

    test('a statement that fails rolls back, throws, and leaves the database usable', async () => {
      await assert.rejects(runTransaction(db, [step(insert, { name: 'c', n: 0 }), step(insert, { name: 'a', n: 0 })]));
      assert.deepEqual(await names(), ['a']);
      assert.equal(await runTransaction(db, [step(insert, { name: 'c', n: 0 })]), true);
      assert.deepEqual(await names(), ['a', 'c']);
    });

    test('runs beside a Kysely transaction that is open, never inside it: its rollback keeps this commit', async () => {
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let opened = () => {};
      const isOpen = new Promise<void>((resolve) => {
        opened = resolve;
      });
      const other = db.transaction().execute(async (trx) => {
        await trx.insertInto('counters').values({ name: 'x', n: 0 }).execute();
        opened();
        await held;
        throw new Error('rolled back on purpose');
      });
      await isOpen;
      const committed = runTransaction(db, [step(insert, { name: 'y', n: 0 })]);
      release();
      await assert.rejects(other, /on purpose/);
      assert.equal(await committed, true);
      assert.deepEqual(await names(), ['a', 'c', 'y']);
    });

    test('refuses a transaction as its handle (it would nest)', async () => {
      await db.transaction().execute(async (trx) => {
        await assert.rejects(runTransaction(trx, [step(insert, { name: 'z', n: 0 })]), /not a transaction/);
      });
    });
  });
}
