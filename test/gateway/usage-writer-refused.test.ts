import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { REJECTED_FILE, UsageJournal } from '../../src/gateway/usage/usage-journal.ts';
import { decodeUsageRow, encodeUsageRow } from '../../src/gateway/usage/usage-row-json.ts';
import { UsageWriter } from '../../src/gateway/usage/usage-writer.ts';
import type { UsageRecordRow } from '../../src/gateway/schema.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { startTestGateway, type TestGateway, usageRow } from '../helpers/gateway.ts';

/**
 * Defect 4 of issue 31: one record the database refuses (what an upstream
 * reporting 1e308 tokens used to make: a count past PostgreSQL's integer, a
 * cost of Infinity that JSON turns into null, refused by NOT NULL on
 * SQLite) went back to the head of the queue with its whole batch, forever
 * and across restarts, and no record of any tenant was written any more.
 */
const silent = pino({ level: 'silent' });

let seq = 0;
const good = (over: Partial<UsageRecordRow> = {}): UsageRecordRow =>
  usageRow({ request_id: `good-${++seq}`, tenant_id: 't1', key_id: 'k1', prompt_tokens: 10, completion_tokens: 5, cost_usd: 0.000001, created_at: 1_700_000_000_000 + seq, ...over });
/** The record the 1e308 upstream made before the fix. */
const poisoned = (id: string): UsageRecordRow =>
  usageRow({ request_id: id, tenant_id: 't1', key_id: 'k1', prompt_tokens: 1e308, completion_tokens: 1e308, cost_usd: Number.POSITIVE_INFINITY, created_at: 1_700_000_000_000 });

/** A logger whose lines the test reads. */
function recordingLog() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'warn' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { log, lines };
}

for (const kind of DB_KINDS) {
  describe(`usage writer: a record the database refuses (${kind})`, () => {
    let g: TestGateway;
    let dir: string;
    before(async () => {
      g = await startTestGateway(kind);
      await g.deps.db.insertInto('tenants').values({ id: 't1', name: 'T', email: 't@example.com', store_bodies: 0, settings: '{}', created_at: 0 }).execute();
      await g.deps.db
        .insertInto('api_keys')
        .values({ id: 'k1', tenant_id: 't1', name: 'k', key_hash: 'h', prefix: 'sk-gw-abc', created_at: 0, last_used_at: null, revoked_at: null, limits: '{}' })
        .execute();
    });
    after(async () => {
      await g.close();
    });
    const stored = async (ids: string[]) =>
      (await g.deps.db.selectFrom('usage_records').select('request_id').where('request_id', 'in', ids).orderBy('request_id').execute()).map((r) => r.request_id);
    const freshDir = () => {
      dir = mkdtempSync(join(tmpdir(), 'usage-refused-'));
      return dir;
    };
    const rejectedLines = () => readFileSync(join(dir, REJECTED_FILE), 'utf8').split('\n').filter(Boolean);

    test('the good records of its batch are written; it is logged, counted and set aside beside the journal, and the queue is empty', async () => {
      const { log, lines } = recordingLog();
      let rejected = 0;
      const writer = new UsageWriter({
        db: g.deps.db,
        log,
        flushMs: 60_000,
        batchSize: 1000,
        journal: new UsageJournal({ dir: freshDir(), log }),
        onRejected: (n) => {
          rejected += n;
        },
      });
      const before = Array.from({ length: 37 }, () => good());
      const afterIt = Array.from({ length: 62 }, () => good());
      for (const r of before) writer.record(r);
      writer.record(poisoned('poison-1'));
      for (const r of afterIt) writer.record(r);
      await writer.flush();
      const ids = [...before, ...afterIt].map((r) => r.request_id);
      assert.equal((await stored(ids)).length, 99, 'every good record of the batch is written');
      assert.deepEqual(await stored(['poison-1']), []);
      assert.equal(writer.queued, 0, 'nothing waits at the head of the queue');
      assert.equal(rejected, 1);
      const kept = rejectedLines();
      assert.equal(kept.length, 1);
      assert.equal(decodeUsageRow(kept[0]!).request_id, 'poison-1', 'set aside as its journal line');
      const logged = lines.find((l) => l['request_id'] === 'poison-1');
      assert.ok(logged, 'logged with its ids');
      assert.equal(logged['tenant_id'], 't1');
      // The next batches go on as usual.
      const later = good();
      writer.record(later);
      await writer.flush();
      assert.deepEqual(await stored([later.request_id]), [later.request_id]);
      await writer.close();
      assert.deepEqual(readdirSync(dir), [REJECTED_FILE], 'every journal segment written and deleted; only the refused record stays on disk');
      rmSync(dir, { recursive: true, force: true });
    });

    test('several refused records anywhere in a batch: each set aside, every other written', async () => {
      let rejected = 0;
      const writer = new UsageWriter({ db: g.deps.db, log: silent, flushMs: 60_000, batchSize: 500, onRejected: (n) => (rejected += n) });
      const rows: UsageRecordRow[] = [];
      for (let i = 0; i < 300; i++) rows.push(i === 0 || i === 1 || i === 150 || i === 299 ? poisoned(`poison-many-${i}`) : good());
      for (const r of rows) writer.record(r);
      await writer.flush();
      assert.equal(rejected, 4);
      assert.equal(writer.queued, 0);
      const goodIds = rows.filter((r) => r.request_id.startsWith('good-')).map((r) => r.request_id);
      assert.equal((await stored(goodIds)).length, 296);
      await writer.close();
    });

    test('a database that cannot write anything (table gone) sets nothing aside: every record, the bad one too, waits for the next try', async () => {
      let rejected = 0;
      const writer = new UsageWriter({ db: g.deps.db, log: silent, flushMs: 60_000, batchSize: 1000, onRejected: (n) => (rejected += n) });
      const rows = [good(), good(), poisoned('poison-outage'), good()];
      await g.deps.db.schema.alterTable('usage_records').renameTo('usage_records_away').execute();
      try {
        for (const r of rows) writer.record(r);
        await writer.flush();
        assert.equal(writer.queued, 4, 'all kept');
        assert.equal(rejected, 0, 'an outage is not a bad record');
        writer.record(poisoned('poison-alone'));
        await writer.flush();
        assert.equal(writer.queued, 5);
        assert.equal(rejected, 0);
      } finally {
        await g.deps.db.schema.alterTable('usage_records_away').renameTo('usage_records').execute();
      }
      await writer.flush();
      assert.equal(writer.queued, 0, 'once the database is back: the good written, the bad set aside');
      assert.equal(rejected, 2);
      assert.equal((await stored(rows.map((r) => r.request_id))).length, 3);
      await writer.close();
    });

    test('a lone refused record (nothing beside it to write) is set aside too: the database says the value is the fault', async () => {
      let rejected = 0;
      const writer = new UsageWriter({ db: g.deps.db, log: silent, flushMs: 60_000, batchSize: 1000, onRejected: (n) => (rejected += n) });
      writer.record(poisoned('poison-lone'));
      await writer.flush();
      assert.equal(writer.queued, 0);
      assert.equal(rejected, 1);
      await writer.close();
    });

    test('journal recovery at start: the segment a stopped gateway left with a refused record among good ones is written, once, and deleted', async () => {
      freshDir();
      const host = encodeURIComponent(hostname());
      const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
      const rows = [good(), good(), poisoned('poison-journal'), good(), good()];
      writeFileSync(join(dir, `usage~${host}~${dead}~dddd~1.jsonl`), rows.map((r) => `${encodeUsageRow(r)}\n`).join(''));
      let rejected = 0;
      const journal = new UsageJournal({ dir, log: silent });
      const writer = new UsageWriter({ db: g.deps.db, log: silent, flushMs: 60_000, batchSize: 1000, journal, onRejected: (n) => (rejected += n) });
      assert.equal(writer.recover(journal.orphans()), 5);
      await writer.flush();
      assert.equal(writer.queued, 0);
      assert.equal(rejected, 1);
      assert.equal((await stored(rows.map((r) => r.request_id))).length, 4);
      await writer.close();
      assert.deepEqual(readdirSync(dir), [REJECTED_FILE], 'the segment is gone: the next start does not meet the record again');
      assert.equal(decodeUsageRow(rejectedLines()[0]!).request_id, 'poison-journal');
      // A second start finds nothing to recover.
      const again = new UsageJournal({ dir, log: silent });
      assert.deepEqual(again.orphans(), []);
      again.close();
      rmSync(dir, { recursive: true, force: true });
    });
  });
}
