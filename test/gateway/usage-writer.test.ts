import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { SqliteKysely } from '../../src/platform/db.ts';
import { UsageJournal } from '../../src/gateway/usage/usage-journal.ts';
import { decodeUsageRow, encodeUsageRow, USAGE_COLUMNS, usageValues } from '../../src/gateway/usage/usage-row-json.ts';
import { UsageThread } from '../../src/gateway/usage/usage-thread.ts';
import { UsageWriter } from '../../src/gateway/usage/usage-writer.ts';
import type { UsageRecordRow } from '../../src/gateway/schema.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { startTestGateway, type TestGateway, usageRow } from '../helpers/gateway.ts';

const log = pino({ level: 'silent' });

function row(i: number, over: Partial<UsageRecordRow> = {}): UsageRecordRow {
  return usageRow({
    request_id: `req-${i}`,
    tenant_id: 't1',
    key_id: 'k1',
    prompt_tokens: 10,
    completion_tokens: 5,
    cost_usd: 0.000001,
    created_at: 1_700_000_000_000 + i,
    ...over,
  });
}

for (const kind of DB_KINDS) {
  describe(`usage writer (${kind})`, () => {
    let g: TestGateway & { db: TestGateway['deps']['db'] };
    before(async () => {
      const started = await startTestGateway(kind);
      g = Object.assign(started, { db: started.deps.db });
      await g.db.insertInto('tenants').values({ id: 't1', name: 'T', email: 't@example.com', store_bodies: 0, settings: '{}', created_at: 0 }).execute();
      await g.db
        .insertInto('api_keys')
        .values({ id: 'k1', tenant_id: 't1', name: 'k', key_hash: 'h', prefix: 'sk-gw-abc', created_at: 0, last_used_at: null, revoked_at: null, limits: '{}' })
        .execute();
    });
    after(() => g.close());

    test('record only queues; a batch is written when the batch size is reached, with the key last_used_at', async () => {
      const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 3 });
      writer.record(row(1));
      writer.record(row(2));
      assert.equal(writer.queued, 2);
      const before = await g.db.selectFrom('usage_records').select('request_id').execute();
      assert.equal(before.length, 0, 'nothing written before the batch is full');
      writer.record(row(3));
      await writer.flush();
      const rows = await g.db.selectFrom('usage_records').selectAll().orderBy('request_id').execute();
      assert.deepEqual(rows.map((r) => r.request_id), ['req-1', 'req-2', 'req-3']);
      assert.equal(rows[0]!.cost_usd, 0.000001, 'cost kept as a double');
      const key = await g.db.selectFrom('api_keys').select('last_used_at').where('id', '=', 'k1').executeTakeFirstOrThrow();
      assert.equal(key.last_used_at, 1_700_000_000_003);
      await writer.close();
    });

    test('a large batch lets the event loop turn while it is written (calls in flight are not held for the whole batch)', async () => {
      const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 500 });
      for (let i = 0; i < 500; i++) writer.record(row(10_000 + i, { session_id: `s-${i % 40}`, tag: `tag-${i % 7}`, created_at: 1_600_000_000_000 + i }));
      let written = false;
      const flushed = writer.flush().then(() => {
        written = true;
      });
      // A macrotask queued as the write starts: it must run while the batch is still being written, not after it.
      const turns: boolean[] = [];
      await new Promise<void>((resolve) => {
        const tick = () => {
          turns.push(written);
          if (written || turns.length > 1000) resolve();
          else setImmediate(tick);
        };
        setImmediate(tick);
      });
      await flushed;
      assert.ok(turns.filter((w) => !w).length >= 5, `the event loop turned ${turns.filter((w) => !w).length} times during the write`);
      const count = await g.db.selectFrom('usage_records').select((eb) => eb.fn.countAll<number>().as('n')).where('request_id', 'like', 'req-1____').executeTakeFirstOrThrow();
      assert.equal(Number(count.n), 500, 'every record of the batch is written');
      await writer.close();
    });

    if (kind === 'sqlite') {
      test('on a SQLite file the records are written by the usage thread, not on the connection that answers calls', async () => {
        assert.ok(g.db instanceof SqliteKysely);
        const main = g.db.writer.connection.prepare('SELECT total_changes() AS n');
        const before = Number((main.get() as { n: number }).n);
        const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000 });
        for (let i = 0; i < 300; i++) writer.record(row(20_000 + i, { created_at: 1_650_000_000_000 + i }));
        await writer.flush();
        const count = await g.db.selectFrom('usage_records').select((eb) => eb.fn.countAll<number>().as('n')).where('request_id', 'like', 'req-20___').executeTakeFirstOrThrow();
        assert.equal(Number(count.n), 300, 'every record written (and visible to the main connection)');
        assert.equal(Number((main.get() as { n: number }).n), before, 'the main connection wrote nothing: no statement of the batch ran on its thread');
        await writer.close();
      });

      test('the usage thread runs 10 nicer than the process (Linux), so a batch does not hold the event loop off a core', { skip: process.platform !== 'linux' && 'Linux only: thread priorities through /proc and setpriority' }, async () => {
        // Each thread of this process with its nice value (field 19 of /proc/self/task/TID/stat).
        const niceByThread = () => {
          const nice = new Map<string, number>();
          for (const tid of readdirSync('/proc/self/task')) {
            try {
              const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
              nice.set(tid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
            } catch {
              // A thread that ended meanwhile.
            }
          }
          return nice;
        };
        const processNice = getPriority();
        const before = niceByThread();
        const thread = new UsageThread(g.db instanceof SqliteKysely ? g.db.path : '');
        await thread.write([JSON.stringify(row(40_000, { created_at: 1_600_000_000_000 }))]);
        const started = [...niceByThread()].filter(([tid]) => !before.has(tid));
        assert.ok(started.length >= 1, 'the usage thread started');
        assert.ok(
          started.some(([, nice]) => nice === Math.min(19, processNice + 10)),
          `a new thread at nice ${Math.min(19, processNice + 10)}; new threads: ${JSON.stringify(started)}`,
        );
        assert.equal(niceByThread().get(String(process.pid)), processNice, 'the main thread keeps its priority');
        await thread.close();
      });

      test('a usage thread that cannot open the database fails its batch (kept for a retry) instead of hanging', async () => {
        const thread = new UsageThread(join(tmpdir(), 'no-such-dir', 'nothing', 'gateway.sqlite'));
        await assert.rejects(thread.write([JSON.stringify(row(30_000))]), /usage thread/);
        // The next batch starts a new thread, which fails the same way: each write settles.
        await assert.rejects(thread.write([JSON.stringify(row(30_001))]), /usage thread/);
        await thread.close();
      });
    }

    test('records arriving while a full batch is written wait for the next full batch or the timer, not a batch of their own', async () => {
      const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 3 });
      const ids = [40_001, 40_002, 40_003, 40_004, 40_005, 40_006, 40_007];
      const stored = async () =>
        (await g.db.selectFrom('usage_records').select('request_id').where('request_id', 'in', ids.map((i) => `req-${i}`)).execute()).length;
      const early = (i: number) => row(i, { created_at: 1_500_000_000_000 + i }); // apart from the other tests' time ranges
      for (const i of ids.slice(0, 3)) writer.record(early(i)); // full: its write starts at once
      writer.record(early(ids[3]!)); // arrives while that batch is written
      for (let i = 0; i < 200 && (await stored()) < 3; i++) await new Promise((r) => setTimeout(r, 5));
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
      assert.equal(await stored(), 3, 'the full batch only');
      assert.equal(writer.queued, 1, 'the latecomer waits');
      for (const i of ids.slice(4)) writer.record(early(i)); // the next full batch: 4 queued, 3 written
      for (let i = 0; i < 200 && (await stored()) < 6; i++) await new Promise((r) => setTimeout(r, 5));
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
      assert.equal(await stored(), 6);
      assert.equal(writer.queued, 1);
      await writer.close();
      assert.equal(await stored(), 7, 'close writes the rest');
    });

    test('the timer writes a partial batch', async () => {
      const writer = new UsageWriter({ db: g.db, log, flushMs: 20, batchSize: 1000 });
      writer.record(row(10));
      for (let i = 0; i < 100 && writer.queued > 0; i++) await new Promise((r) => setTimeout(r, 10));
      await writer.flush();
      const found = await g.db.selectFrom('usage_records').select('request_id').where('request_id', '=', 'req-10').executeTakeFirst();
      assert.ok(found);
      await writer.close();
    });

    test('close writes everything still queued (graceful shutdown loses nothing)', async () => {
      const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000 });
      for (let i = 100; i < 350; i++) writer.record(row(i));
      await writer.close();
      const all = await g.db.selectFrom('usage_records').select('request_id').where('created_at', '>=', 1_700_000_000_100).execute();
      assert.equal(all.length, 250);
    });

    test('a failed batch is kept and written by a later flush; last_used_at never moves back', async () => {
      const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000 });
      await g.db.schema.alterTable('usage_records').renameTo('usage_records_away').execute();
      writer.record(row(500, { created_at: 1 }));
      await writer.flush();
      assert.equal(writer.queued, 1, 'kept after the failure');
      await g.db.schema.alterTable('usage_records_away').renameTo('usage_records').execute();
      await writer.flush();
      assert.equal(writer.queued, 0);
      assert.ok(await g.db.selectFrom('usage_records').select('request_id').where('request_id', '=', 'req-500').executeTakeFirst());
      const key = await g.db.selectFrom('api_keys').select('last_used_at').where('id', '=', 'k1').executeTakeFirstOrThrow();
      assert.ok(key.last_used_at! > 1, 'an older record does not move last_used_at back');
      await writer.close();
    });

    test('past the buffer bound the oldest records are dropped and counted', async () => {
      let dropped = 0;
      const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000, maxBuffered: 5, onDropped: (n) => {
        dropped += n;
      } });
      await g.db.schema.alterTable('usage_records').renameTo('usage_records_away').execute();
      for (let i = 600; i < 608; i++) writer.record(row(i));
      await writer.flush();
      assert.equal(writer.queued, 5);
      assert.equal(dropped, 3);
      await g.db.schema.alterTable('usage_records_away').renameTo('usage_records').execute();
      await writer.close();
      const kept = await g.db.selectFrom('usage_records').select('request_id').where('request_id', 'like', 'req-60%').orderBy('request_id').execute();
      assert.deepEqual(kept.map((r) => r.request_id), ['req-603', 'req-604', 'req-605', 'req-606', 'req-607']);
    });

    describe('with a journal', () => {
      let dir: string;
      before(() => {
        dir = mkdtempSync(join(tmpdir(), 'usage-journal-'));
      });
      after(() => rmSync(dir, { recursive: true, force: true }));
      const journaled = () => readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => decodeUsageRow(l).request_id));

      test('records are on disk once durable() resolves (one write for those of a turn), and a segment is deleted once written', async () => {
        const writer = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000, journal: new UsageJournal({ dir, log }) });
        assert.equal(writer.durable(), undefined, 'nothing to wait for');
        writer.record(row(700));
        writer.record(row(701));
        const durable = writer.durable();
        assert.ok(durable, 'records wait to be written');
        assert.equal(writer.durable(), durable, 'the calls of one turn wait for the same write');
        await durable;
        assert.deepEqual(journaled(), ['req-700', 'req-701'], 'journaled before any flush to the database');
        await writer.flush();
        writer.record(row(702));
        await writer.durable();
        assert.deepEqual(journaled(), ['req-702'], 'the written segment is gone, the next record is in a new one');
        await writer.close();
        assert.deepEqual(readdirSync(dir), [], 'nothing left after a clean close');
        assert.equal((await g.db.selectFrom('usage_records').select('request_id').where('request_id', 'in', ['req-700', 'req-701', 'req-702']).execute()).length, 3);
      });

      test('records the database refused at shutdown stay journaled and the next start writes them, once', async () => {
        const first = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000, journal: new UsageJournal({ dir, log }) });
        await g.db.schema.alterTable('usage_records').renameTo('usage_records_away').execute();
        for (let i = 710; i < 715; i++) first.record(row(i));
        await first.close();
        await g.db.schema.alterTable('usage_records_away').renameTo('usage_records').execute();
        assert.equal(journaled().length, 5, 'kept on disk');
        // One of them reached the database before the restart (a flush the stop interrupted): it is not written twice.
        const once = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000 });
        once.record(row(710));
        await once.close();

        const journal = new UsageJournal({ dir, log });
        const second = new UsageWriter({ db: g.db, log, flushMs: 60_000, batchSize: 1000, journal });
        assert.equal(second.recover(journal.orphans()), 5);
        await second.close();
        const written = await g.db.selectFrom('usage_records').select('request_id').where('request_id', 'like', 'req-71%').orderBy('request_id').execute();
        assert.deepEqual(written.map((r) => r.request_id), ['req-710', 'req-711', 'req-712', 'req-713', 'req-714']);
        assert.deepEqual(readdirSync(dir), []);
      });

      test("a live gateway's segments are not taken; a dead process's are, with a line cut short by the kill skipped", () => {
        const host = encodeURIComponent(hostname());
        const live = process.ppid;
        const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
        const line = (i: number) => `${encodeUsageRow(row(i))}\n`;
        // An earlier gateway journaled each record as an object: its segments are recovered too.
        const objectLine = (i: number) => `${JSON.stringify(row(i))}\n`;
        writeFileSync(join(dir, `usage~${host}~${live}~aaaa~1.jsonl`), line(720));
        writeFileSync(join(dir, `usage~${host}~${dead}~bbbb~1.jsonl`), line(721) + objectLine(722));
        appendFileSync(join(dir, `usage~${host}~${dead}~bbbb~1.jsonl`), line(723).slice(0, 40));
        writeFileSync(join(dir, `usage~other-host~${dead}~cccc~1.jsonl`), line(724));
        const journal = new UsageJournal({ dir, log });
        const orphans = journal.orphans();
        journal.close();
        assert.deepEqual(orphans.map((o) => o.rows.map((r) => r.request_id)), [['req-721', 'req-722']]);
        assert.deepEqual(orphans[0]!.rows, [row(721), row(722)], 'every field, from either form');
        for (const f of readdirSync(dir)) rmSync(join(dir, f));
      });
    });
  });
}

describe('usage records as journal lines', () => {
  test('a record comes back from its line with every field, each in its place', () => {
    // A distinct value per column: a value written under one column and read under another cannot go unnoticed.
    const full = Object.fromEntries(USAGE_COLUMNS.map((c, i) => [c, i % 3 === 0 ? i : i % 3 === 1 ? `${c}-value` : null])) as unknown as UsageRecordRow;
    const line = encodeUsageRow(full);
    assert.ok(line.startsWith('['), 'an array of values, not the field names');
    assert.deepEqual(decodeUsageRow(line), full);
    assert.deepEqual(Object.keys(decodeUsageRow(line)), [...USAGE_COLUMNS]);
    assert.deepEqual(decodeUsageRow(JSON.stringify(full)), full, "an earlier gateway's object line reads the same");
    assert.throws(() => decodeUsageRow(line.slice(0, 40)), SyntaxError, 'a line cut short is refused');
    // A line or an object journaled before surface existed: every call was a Chat Completions call then.
    const { surface: _, ...older } = full;
    assert.deepEqual(USAGE_COLUMNS.slice(-2), ['saved_provider_cache_usd', 'surface'], 'the newest columns last');
    assert.deepEqual(decodeUsageRow(JSON.stringify(usageValues(full).slice(0, -1))), { ...full, surface: 'chat.completions' });
    assert.deepEqual(decodeUsageRow(JSON.stringify(older)), { ...full, surface: 'chat.completions' });
    // ... and before saved_provider_cache_usd existed: the provider's caching saved nothing then.
    const { saved_provider_cache_usd: __, ...oldest } = older;
    assert.deepEqual(decodeUsageRow(JSON.stringify(usageValues(full).slice(0, -2))), { ...full, saved_provider_cache_usd: 0, surface: 'chat.completions' });
    assert.deepEqual(decodeUsageRow(JSON.stringify(oldest)), { ...full, saved_provider_cache_usd: 0, surface: 'chat.completions' });
    // The insert binds these in the order of its columns, USAGE_COLUMNS.
    assert.deepEqual(usageValues(full), USAGE_COLUMNS.map((c) => full[c]), "the insert's values, each under its column");
  });
});

describe('usage writer statement sizes', () => {
  test('a batch of any size is cut into chunks of at most four distinct sizes, in order, nothing lost', async () => {
    const { fixedChunks } = await import('../../src/gateway/usage/usage-writer.ts');
    const sizes = new Set<number>();
    for (let n = 0; n <= 600; n++) {
      const rows = Array.from({ length: n }, (_, i) => i);
      const chunks = fixedChunks(rows);
      assert.deepEqual(chunks.flat(), rows);
      for (const c of chunks) sizes.add(c.length);
    }
    assert.deepEqual([...sizes].sort((a, b) => a - b), [1, 4, 16, 64]);
  });
});
