import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../src/platform/clock.ts';
import { type AnyDb, type DialectName, migrateToLatest, openDatabase } from '../../src/platform/db.ts';
import { periodicJob } from '../../src/platform/jobs.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { fixtureMigrations } from '../helpers/platform-service.ts';

const log = pino({ level: 'silent' });
const INTERVAL = 60_000;

interface Replica {
  db: AnyDb;
  dialect: DialectName;
}

for (const kind of DB_KINDS) {
  describe(`periodicJob (${kind})`, () => {
    let database: TestDatabase;
    let a: Replica;
    let b: Replica;
    before(async () => {
      database = await freshDatabase(kind);
      const open = () => openDatabase({ url: database.url, sqlitePath: join(database.dataDir, 'fixture.sqlite') });
      a = await open();
      await migrateToLatest(a.db, fixtureMigrations);
      b = await open(); // a second handle: on PostgreSQL its own pool, like another replica
    });
    after(async () => {
      await a.db.destroy();
      await b.db.destroy();
      await database.drop();
    });

    /** A job on `replica` with a name no other test uses (advisory locks are per database, not per schema). */
    function job(replica: Replica, clock: ManualClock, name: string, run: () => Promise<void>) {
      return periodicJob({ name, intervalMs: INTERVAL, db: replica.db, dialect: replica.dialect, clock, log, run });
    }

    test('runs once per tick: again in the same tick does nothing, a tick later it runs again', async () => {
      const clock = new ManualClock();
      const name = `test:${randomUUID()}`;
      let runs = 0;
      const j = job(a, clock, name, async () => {
        runs++;
      });
      assert.equal(await j.runOnce(), true);
      assert.equal(await j.runOnce(), false);
      clock.advance(INTERVAL / 4);
      assert.equal(await j.runOnce(), false, 'a quarter interval later is still the same tick');
      assert.equal(runs, 1);
      clock.advance(INTERVAL);
      assert.equal(await j.runOnce(), true);
      assert.equal(runs, 2);
      const row = await a.db.selectFrom('job_runs').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
      assert.equal(Number(row.last_run_at), clock.now(), 'the claimed tick is recorded');
    });

    test('a job name is its own schedule: another job runs in the same tick', async () => {
      const clock = new ManualClock();
      let runs = 0;
      const count = async () => {
        runs++;
      };
      assert.equal(await job(a, clock, `test:${randomUUID()}`, count).runOnce(), true);
      assert.equal(await job(a, clock, `test:${randomUUID()}`, count).runOnce(), true);
      assert.equal(runs, 2);
    });

    test('a run that throws rejects runOnce, and the next tick runs normally', async () => {
      const clock = new ManualClock();
      const name = `test:${randomUUID()}`;
      let fail = true;
      let runs = 0;
      const j = job(a, clock, name, async () => {
        runs++;
        if (fail) throw new Error('boom');
      });
      await assert.rejects(j.runOnce(), /boom/);
      fail = false;
      assert.equal(await j.runOnce(), false, 'the failed tick is not retried at once');
      clock.advance(INTERVAL);
      // On PostgreSQL this also shows the advisory lock was released after the failure.
      assert.equal(await job(b, clock, name, async () => {}).runOnce(), true);
      assert.equal(runs, 1);
    });

    test('two replicas calling runOnce concurrently run the job exactly once per tick', async () => {
      const clock = new ManualClock();
      const name = `test:${randomUUID()}`;
      const runsAt: number[] = [];
      const run = async () => {
        runsAt.push(clock.now());
        await new Promise((r) => setTimeout(r, 5));
      };
      const replicas = [job(a, clock, name, run), job(b, clock, name, run)];
      for (let tick = 0; tick < 5; tick++) {
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => replicas[i % 2]!.runOnce()));
        assert.equal(results.filter(Boolean).length, 1, `tick ${tick}: ${results}`);
        clock.advance(INTERVAL);
      }
      assert.equal(runsAt.length, 5);
      assert.equal(new Set(runsAt).size, 5, 'one run in each tick');
    });

    if (kind === 'postgres') {
      test('while one replica runs the job, the other cannot start it, even a tick later (advisory lock)', { timeout: 10_000 }, async () => {
        const clock = new ManualClock();
        const name = `test:${randomUUID()}`;
        let release!: () => void;
        const gate = new Promise<void>((r) => {
          release = r;
        });
        let started!: () => void;
        const running = new Promise<void>((r) => {
          started = r;
        });
        let slowRuns = 0;
        let otherRuns = 0;
        const slow = job(a, clock, name, async () => {
          slowRuns++;
          started();
          await gate;
        });
        const other = job(b, clock, name, async () => {
          otherRuns++;
        });

        const first = slow.runOnce();
        try {
          await running;
          clock.advance(INTERVAL); // the next tick is due: only the lock keeps the runs apart
          assert.equal(await other.runOnce(), false);
          assert.equal(await other.runOnce(), false);
          assert.equal(otherRuns, 0);
        } finally {
          release();
        }
        assert.equal(await first, true);
        assert.equal(await other.runOnce(), true, 'once the slow run finished, the due tick runs');
        assert.equal(slowRuns, 1);
        assert.equal(otherRuns, 1);
      });
    }
  });
}
