import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import pino from 'pino';
import { insertUsageRecords, UsageWriter } from '../../../src/gateway/usage/usage-writer.ts';
import { gatewayMigrations } from '../../../src/gateway/migrations.ts';
import { purgeGateway } from '../../../src/gateway/usage/purge.ts';
import type { GatewayTables, UsageRecordRow } from '../../../src/gateway/schema.ts';
import type { UsageFilter } from '../../../src/gateway/usage/usage-filters.ts';
import { type UsageGroupBy, type UsageTotals, usageReport } from '../../../src/gateway/usage/usage-queries.ts';
import { histogramQuantile, LATENCY_BUCKETS, LATENCY_ROLLUPS, latencyBucket, MEASURES_0006, ROLLUPS, rebuildUsageRollups } from '../../../src/gateway/usage/usage-rollups.ts';
import { closeDatabase, migrateToLatest, openDatabase } from '../../../src/platform/db.ts';
import { freshDatabase } from '../../helpers/database.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway, usageRow } from '../../helpers/gateway.ts';

const log = pino({ level: 'silent' });
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** Records start here (a Monday, 00:00 UTC) and spread over five days. */
const T0 = Date.UTC(2026, 1, 2);
const SPAN = 5 * DAY;

/** A small seeded generator (mulberry32), so a failure names the seed that reproduces it. */
function random(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = Number(process.env['USAGE_ROLLUP_SEED'] ?? Date.now() % 1_000_000);

/** Records of two tenants at any millisecond of five days, every label present or absent, every cache status. */
function makeRecords(count: number): UsageRecordRow[] {
  const r = random(SEED);
  const pick = <T>(items: readonly T[]) => items[Math.floor(r() * items.length)]!;
  const rows: UsageRecordRow[] = [];
  for (let i = 0; i < count; i++) {
    const status = pick([200, 200, 200, 200, 429, 502]);
    const cacheStatus = pick(['miss', 'miss', 'hit', 'dedup', 'bypass']);
    const [requested, used] = pick([
      ['gpt-4o-mini', 'openai/gpt-4o-mini'],
      ['auto', 'openai/gpt-5-nano'],
      ['auto', 'anthropic/claude-haiku-4-5'],
      ['claude-sonnet', 'anthropic/claude-sonnet-4-5'],
    ] as const);
    const savedCache = cacheStatus === 'hit' || cacheStatus === 'dedup' ? Math.round(r() * 1e6) / 1e8 : 0;
    const saved = [savedCache, Math.round(r() * 1e5) / 1e8, (Math.round(r() * 2e5) - 5e4) / 1e8, Math.round(r() * 1e5) / 1e8];
    rows.push(
      usageRow({
        request_id: `rec-${SEED}-${i}`,
        tenant_id: i % 7 === 0 ? 'tenant-b' : 'tenant-a',
        key_id: pick(['key-1', 'key-2', 'key-3']),
        tag: pick(['search', 'support/agent', '=SUM(A1)', null]),
        session_id: r() < 0.3 ? null : `s-${Math.floor(r() * 25)}`,
        model_requested: requested,
        model_used: status === 429 ? null : used,
        status,
        cache_status: cacheStatus,
        prompt_tokens: Math.floor(r() * 5000),
        completion_tokens: Math.floor(r() * 800),
        saved_tokens: Math.floor(r() * 300),
        cost_usd: Math.round(r() * 1e6) / 1e8,
        saved_cache_usd: saved[0]!,
        saved_compaction_usd: saved[1]!,
        saved_routing_usd: saved[2]!,
        saved_prompt_cache_usd: saved[3]!,
        cost_saved_usd: saved.reduce((a, b) => a + b, 0),
        // The provider's own caching, outside cost_saved_usd; negative at times (a write premium).
        saved_provider_cache_usd: (Math.round(r() * 2e5) - 4e4) / 1e8,
        overhead_ms: 0.05 + r() * 5,
        upstream_ms: cacheStatus === 'hit' ? 0 : r() * 4000,
        created_at: T0 + Math.floor(r() * SPAN),
      }),
    );
  }
  return rows;
}

type Totals = Omit<UsageTotals, 'cache_hit_rate'> & { cache_hit_rate: number | null };

/** The report as the records say it should be: computed here from the rows, independently of the rollups. */
function expected(records: readonly UsageRecordRow[], filter: UsageFilter, groupBy?: UsageGroupBy): { totals: Totals; groups: Map<string | null, Totals> } {
  const zero = (): Totals => ({
    requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, tokens_saved: 0, cost_usd: 0, cost_saved_usd: 0, cost_without_gateway_usd: 0,
    saved_cache_usd: 0, saved_dedup_usd: 0, saved_compaction_usd: 0, saved_routing_usd: 0, saved_prompt_cache_usd: 0,
    saved_provider_cache_usd: 0, cache_hits: 0, dedup_hits: 0, cache_misses: 0, cache_hit_rate: null,
  });
  const add = (t: Totals, r: UsageRecordRow) => {
    t.requests++;
    if (r.status >= 400) t.errors++;
    t.prompt_tokens += r.prompt_tokens;
    t.completion_tokens += r.completion_tokens;
    t.tokens_saved += r.saved_tokens;
    t.cost_usd += r.cost_usd;
    t.cost_saved_usd += r.cost_saved_usd;
    t.cost_without_gateway_usd += r.cost_usd + r.cost_saved_usd;
    if (r.cache_status === 'dedup') t.saved_dedup_usd += r.saved_cache_usd;
    else t.saved_cache_usd += r.saved_cache_usd;
    t.saved_compaction_usd += r.saved_compaction_usd;
    t.saved_routing_usd += r.saved_routing_usd;
    t.saved_prompt_cache_usd += r.saved_prompt_cache_usd;
    t.saved_provider_cache_usd += r.saved_provider_cache_usd;
    if (r.cache_status === 'hit') t.cache_hits++;
    if (r.cache_status === 'dedup') t.dedup_hits++;
    if (r.cache_status === 'miss') t.cache_misses++;
    const served = t.cache_hits + t.dedup_hits;
    t.cache_hit_rate = served + t.cache_misses === 0 ? null : served / (served + t.cache_misses);
  };
  const keyOf = (r: UsageRecordRow): string | null => {
    switch (groupBy) {
      case 'tag':
        return r.tag;
      case 'session':
        return r.session_id;
      case 'model':
        return r.model_used ?? r.model_requested;
      case 'key':
        return r.key_id;
      case 'day':
        return new Date(r.created_at).toISOString().slice(0, 10);
      case 'hour':
        return new Date(Math.floor(r.created_at / HOUR) * HOUR).toISOString();
      default:
        return null;
    }
  };
  const totals = zero();
  const groups = new Map<string | null, Totals>();
  for (const r of records) {
    if (r.tenant_id !== filter.tenantId || r.created_at < filter.from || r.created_at >= filter.to) continue;
    if (filter.tag !== undefined && r.tag !== filter.tag) continue;
    if (filter.sessionId !== undefined && r.session_id !== filter.sessionId) continue;
    if (filter.keyId !== undefined && r.key_id !== filter.keyId) continue;
    if (filter.model !== undefined && r.model_used !== filter.model && r.model_requested !== filter.model) continue;
    add(totals, r);
    const key = keyOf(r);
    if (!groups.has(key)) groups.set(key, zero());
    add(groups.get(key)!, r);
  }
  return { totals, groups };
}

/** Integers exactly, money to a billionth of a dollar (sums in another order differ in the last bits). */
/** Both tenants' whole-span reports (totals, by session, by day) agree with the records they were written from. */
async function assertReportsAgree(db: Kysely<GatewayTables>, records: readonly UsageRecordRow[]): Promise<void> {
  for (const tenantId of ['tenant-a', 'tenant-b']) {
    const f: UsageFilter = { tenantId, from: T0, to: T0 + SPAN };
    for (const groupBy of [undefined, 'session', 'day'] as const) {
      const report = await usageReport({ db }, f, groupBy);
      const want = expected(records, f, groupBy);
      assertTotals(report.totals, want.totals, `${tenantId} ${groupBy}`);
      for (const g of report.groups ?? []) assertTotals(g, want.groups.get(g.key)!, `${tenantId} ${groupBy} ${g.key}`);
    }
  }
}

function assertTotals(actual: UsageTotals, wanted: Totals, what: string): void {
  for (const [field, value] of Object.entries(wanted)) {
    const got = actual[field as keyof UsageTotals];
    if (value === null || Number.isInteger(value)) assert.equal(got, value, `${what}: ${field}`);
    else assert.ok(Math.abs((got as number) - value) < 1e-9, `${what}: ${field} is ${got}, the records say ${value}`);
  }
}

/** Every rollup table's rows, sorted, money rounded (to compare two ways of filling them). */
async function snapshot(db: TestGateway['deps']['db']): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const { table } of [...ROLLUPS, ...LATENCY_ROLLUPS]) {
    const rows = await db.selectFrom(table).selectAll().execute();
    out[table] = rows
      .map((row) => JSON.stringify(Object.entries(row).map(([k, v]) => [k, typeof v === 'number' ? Math.round(v * 1e9) / 1e9 : v])))
      .sort();
  }
  return out;
}

for (const kind of DB_KINDS) {
  describe(`usage rollups (${kind}, seed ${SEED})`, () => {
    let gw: TestGateway;
    const records = makeRecords(1500);
    before(async () => {
      gw = await startTestGateway(kind);
      // Two writers (two replicas) write every record, at the same time, in batches of different sizes: a journal
      // replayed after a crash, or a retried batch, is the same records written again.
      const a = new UsageWriter({ db: gw.deps.db, log, flushMs: 5, batchSize: 64 });
      const b = new UsageWriter({ db: gw.deps.db, log, flushMs: 5, batchSize: 100 });
      for (const r of records) a.record(r);
      for (const r of records.slice(0, 900)) b.record(r);
      await Promise.all([a.close(), b.close()]);
      const again = new UsageWriter({ db: gw.deps.db, log, flushMs: 5, batchSize: 500 });
      for (const r of [...records.slice(600), ...records.slice(0, 20)]) again.record(r);
      await again.close();
    });
    after(() => gw.close());

    const filter = (over: Partial<UsageFilter> = {}): UsageFilter => ({ tenantId: 'tenant-a', from: T0, to: T0 + SPAN, ...over });

    test('each record is counted once, whatever was written twice', async () => {
      const stored = await gw.deps.db.selectFrom('usage_records').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(stored.n), records.length);
      const totals = await gw.deps.db.selectFrom('usage_rollup_tenant').select((eb) => eb.fn.sum<number>('requests').as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(totals.n), records.length);
      for (const tenantId of ['tenant-a', 'tenant-b']) {
        const report = await usageReport(gw.deps, filter({ tenantId }), undefined);
        assertTotals(report.totals, expected(records, filter({ tenantId })).totals, tenantId);
      }
    });

    test('totals, groups and filters agree with the records over ranges of every shape (whole days, whole hours, parts of hours)', async () => {
      const r = random(SEED + 1);
      const ranges: [string, number, number][] = [
        ['all five days', T0, T0 + SPAN],
        ['whole days', T0 + DAY, T0 + 3 * DAY],
        ['whole hours across midnight', T0 + DAY - 5 * HOUR, T0 + DAY + 7 * HOUR],
        ['within one hour', T0 + 2 * DAY + 10 * HOUR + 123_456, T0 + 2 * DAY + 10 * HOUR + 2_345_678],
        ['empty', T0 + DAY, T0 + DAY],
        ...Array.from({ length: 4 }, (_, i): [string, number, number] => {
          const from = T0 + Math.floor(r() * SPAN);
          return [`random ${i}`, from, from + Math.floor(r() * (T0 + SPAN - from))];
        }),
      ];
      const filters: [string, Partial<UsageFilter>][] = [
        ['no filter', {}],
        ['tag', { tag: 'search' }],
        ['tag that looks like a formula', { tag: '=SUM(A1)' }],
        ['session', { sessionId: 's-3' }],
        ['model asked for', { model: 'auto' }],
        ['model that answered', { model: 'anthropic/claude-haiku-4-5' }],
        ['key', { keyId: 'key-2' }],
        ['key and tag', { keyId: 'key-1', tag: 'support/agent' }],
      ];
      for (const [rangeName, from, to] of ranges) {
        for (const [filterName, over] of filters) {
          for (const groupBy of [undefined, 'tag', 'session', 'model', 'key', 'day', 'hour'] as const) {
            const what = `${rangeName}, ${filterName}, ${groupBy ?? 'totals'} (${from}..${to})`;
            const f = filter({ from, to, ...over });
            const report = await usageReport(gw.deps, f, groupBy);
            const want = expected(records, f, groupBy);
            assertTotals(report.totals, want.totals, what);
            if (!groupBy) continue;
            const groups = report.groups!;
            assert.deepEqual(new Set(groups.map((g) => g.key)), new Set(want.groups.keys()), `${what}: the groups`);
            for (const g of groups) assertTotals(g, want.groups.get(g.key)!, `${what}: group ${g.key}`);
            const order = groups.map((g) => (groupBy === 'day' || groupBy === 'hour' ? g.key! : -g.cost_usd));
            assert.deepEqual(order, [...order].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)), `${what}: the order`);
          }
        }
      }
    });

    test('latency percentiles: the histogram of exactly the records in the range, whole hours or not', async () => {
      for (const [from, to] of [
        [T0, T0 + SPAN],
        [T0 + 90_000, T0 + 2 * DAY + 17 * HOUR + 5],
      ] as const) {
        const report = await usageReport(gw.deps, filter({ from, to }), undefined);
        const total = new Array<number>(LATENCY_BUCKETS).fill(0);
        const overhead = new Array<number>(LATENCY_BUCKETS).fill(0);
        const inRange = records.filter((r) => r.tenant_id === 'tenant-a' && r.created_at >= from && r.created_at < to);
        for (const r of inRange) {
          total[latencyBucket(r.overhead_ms + r.upstream_ms)]!++;
          overhead[latencyBucket(r.overhead_ms)]!++;
        }
        assert.equal(report.latency?.calls, inRange.length);
        for (const q of [0.5, 0.95, 0.99] as const) {
          const p = `p${Math.round(q * 100)}` as 'p50' | 'p95' | 'p99';
          assert.equal(report.latency.total_ms[p], histogramQuantile(total, q), `total ${p}`);
          assert.equal(report.latency.overhead_ms[p], histogramQuantile(overhead, q), `overhead ${p}`);
          // Against the exact percentile: within the bucket, 26% at most.
          const exact = inRange.map((r) => r.overhead_ms + r.upstream_ms).sort((x, y) => x - y)[Math.ceil(q * inRange.length) - 1]!;
          assert.ok(Math.abs(report.latency.total_ms[p]! / exact - 1) < 0.26, `total ${p}: ${report.latency.total_ms[p]} against ${exact}`);
        }
      }
      assert.equal((await usageReport(gw.deps, filter({ tag: 'search' }), undefined)).latency, null, 'no latency for a filtered report');
    });

    test('filling the rollups from the records (the migration) gives the rows the writer kept', async () => {
      const kept = await snapshot(gw.deps.db);
      assert.equal(await rebuildUsageRollups(gw.deps.db), records.length);
      assert.deepEqual(await snapshot(gw.deps.db), kept);
    });

    test('an hourly grouping over more than 31 days is refused, naming group_by', async () => {
      const r = await gw.request('GET', `/api/v1/tenant/usage?group_by=hour&from=2026-01-01&to=2026-03-01`, { token: (await gw.signup()).session });
      assert.equal(r.status, 400);
      assert.equal(r.body.code, 'range_too_long');
      assert.equal(r.body.errors[0].field, 'group_by');
    });
  });

  describe(`usage rollups: migration and purge (${kind})`, () => {
    test('0006 fills the rollups from the records an older database holds', async () => {
      const database = await freshDatabase(kind);
      const { db } = await openDatabase<GatewayTables>({ url: database.url, sqlitePath: join(database.dataDir, 'gateway.sqlite') });
      try {
        const before = Object.fromEntries(Object.entries(gatewayMigrations).filter(([name]) => name < '0006'));
        await migrateToLatest(db, before);
        // As a database of that age holds them: without the columns of later migrations (0009's usage_flags, 0010's body_storage,
        // 0011's saved_provider_cache_usd, which then reads 0, 0012's surface).
        const records = makeRecords(300).map((r) => ({ ...r, saved_provider_cache_usd: 0 }));
        await db
          .insertInto('usage_records')
          // Typed as today's rows, which the table of that age is not.
          .values(records.map(({ usage_flags: _, body_storage: __, saved_provider_cache_usd: ___, surface: ____, ...r }) => r) as unknown as UsageRecordRow[])
          .execute();
        await migrateToLatest(db, gatewayMigrations);
        await assertReportsAgree(db, records);
      } finally {
        await closeDatabase(db);
        await database.drop();
      }
    });

    test('0011 adds saved_provider_cache_usd: 0 for the records before it, summed with those after it', async () => {
      const database = await freshDatabase(kind);
      const { db } = await openDatabase<GatewayTables>({ url: database.url, sqlitePath: join(database.dataDir, 'gateway.sqlite') });
      try {
        await migrateToLatest(db, Object.fromEntries(Object.entries(gatewayMigrations).filter(([name]) => name < '0011')));
        const all = makeRecords(400);
        const old = all.slice(0, 200).map((r) => ({ ...r, saved_provider_cache_usd: 0 }));
        // Written as the writer of that version wrote them: the record without the column, the rollups without the measure.
        await db
          .insertInto('usage_records')
          .values(old.map(({ saved_provider_cache_usd: _, surface: __, ...r }) => r) as unknown as UsageRecordRow[])
          .execute();
        await rebuildUsageRollups(db, MEASURES_0006);
        await migrateToLatest(db, gatewayMigrations);
        const stored = await db.selectFrom('usage_records').select(['request_id', 'saved_provider_cache_usd']).execute();
        assert.equal(stored.length, 200);
        assert.ok(stored.every((r) => r.saved_provider_cache_usd === 0));
        // After it, by the usage writer: the records and the rollups keep the measure.
        const recent = all.slice(200);
        assert.ok(recent.some((r) => r.saved_provider_cache_usd < 0) && recent.some((r) => r.saved_provider_cache_usd > 0));
        assert.equal(await insertUsageRecords(db, recent), 200);
        const records = [...old, ...recent];
        await assertReportsAgree(db, records);
        const sum = records.filter((r) => r.tenant_id === 'tenant-a').reduce((a, r) => a + r.saved_provider_cache_usd, 0);
        assert.ok(sum !== 0, 'a non-zero sum to compare');
      } finally {
        await closeDatabase(db);
        await database.drop();
      }
    });

    test('purge removes rollup hours and days once wholly past the retention, with the records', async () => {
      const gw = await startTestGateway(kind, { GATEWAY_USAGE_RETENTION_DAYS: '30' });
      try {
        const { tenantId, session } = await gw.signup();
        gw.clock.advance(30 * 60_000);
        const now = gw.clock.now(); // 12:30 UTC
        const cutoff = now - 30 * DAY;
        const at = [cutoff - 2 * DAY, cutoff - 2 * HOUR, cutoff - 1000, cutoff + 1000, now - HOUR];
        for (const [i, created_at] of at.entries()) await gw.insertUsage({ tenant_id: tenantId, request_id: `p${i}`, created_at, cost_usd: 1 });
        await purgeGateway(gw.deps);
        assert.deepEqual(
          (await gw.deps.db.selectFrom('usage_records').select('request_id').orderBy('request_id').execute()).map((r) => r.request_id),
          ['p3', 'p4'],
        );
        const hours = (await gw.deps.db.selectFrom('usage_rollup_tenant').select(['hour', 'requests']).where('tenant_id', '=', tenantId).orderBy('hour').execute()).map((r) => [r.hour, r.requests]);
        // The hour the cutoff falls in keeps its rollup, p2 (purged) and p3 (kept), until all of it is past the retention.
        assert.deepEqual(hours, [
          [Math.floor(cutoff / HOUR), 2],
          [Math.floor((now - HOUR) / HOUR), 1],
        ]);
        const days = (await gw.deps.db.selectFrom('usage_rollup_labels_daily').select('day').where('tenant_id', '=', tenantId).orderBy('day').execute()).map((r) => r.day);
        assert.deepEqual(days, [Math.floor(cutoff / DAY), Math.floor(now / DAY)]);
        const usage = (from: number) => gw.request('GET', `/api/v1/tenant/usage?from=${from}&to=${now}`, { token: session });
        assert.equal((await usage(cutoff + 1)).body.totals.requests, 2, 'from inside the cut hour: its records are read');
        assert.equal((await usage(Math.floor(cutoff / HOUR) * HOUR)).body.totals.requests, 3, 'the whole cut hour: its rollup, still counting p2');
        gw.clock.advance(HOUR);
        await purgeGateway(gw.deps);
        assert.equal((await usage(Math.floor(cutoff / HOUR) * HOUR)).body.totals.requests, 1, 'an hour later the cut hour is gone');
      } finally {
        await gw.close();
      }
    });
  });
}
