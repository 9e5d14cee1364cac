import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { insertUsageRecords } from '../../../src/gateway/usage/usage-writer.ts';
import { rebuildStoredBodyBytes } from '../../../src/gateway/usage/stored-body-bytes.ts';
import { ManualClock } from '../../../src/platform/clock.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { usageRow } from '../../helpers/gateway.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

const KIB = 1024;
const MAX = 64 * KIB;
const QUOTA = 1024 * KIB;
const DAY = 86_400_000;

/**
 * Bodies are stored only for calls that reached a provider, each cut at
 * GATEWAY_STORED_BODY_MAX_BYTES on a character boundary (and marked so),
 * within a quota per workspace (GATEWAY_STORED_BODIES_QUOTA_BYTES) that
 * frees as the retention purges old records. Three 10 MB bodies refused
 * with provider_key_missing used to grow the database by 60 MB.
 */
for (const kind of DB_KINDS) {
  describe(`stored bodies (${kind})`, () => {
    let gw: LiveGateway;
    const clock = new ManualClock(Date.UTC(2026, 4, 4, 12));
    before(async () => {
      gw = await startLiveGateway(
        kind,
        { GATEWAY_STORED_BODY_MAX_BYTES: String(MAX), GATEWAY_STORED_BODIES_QUOTA_BYTES: String(QUOTA), GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0' },
        { clock },
      );
    });
    after(() => gw.close());

    async function storing(providers?: string[]): Promise<LiveTenant> {
      const t = await gw.tenant(providers ? { providers } : { providers: ['openai'] });
      assert.equal((await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { store_bodies: true } })).status, 200);
      return t;
    }

    /** A raw call (the body exactly as written here), its status and request id. */
    async function call(t: LiveTenant, body: string, headers: Record<string, string> = {}) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${t.apiKey}`, ...headers },
        body,
      });
      const text = await res.text();
      return { status: res.status, id: res.headers.get('x-gateway-request-id')!, text };
    }
    const chat = (content: string, extra: object = {}) => JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });
    const detail = async (t: LiveTenant, id: string) => (await gw.api(`/api/v1/tenant/requests/${id}`, { token: t.session })).body;

    test('a call refused before any provider keeps no body, however large (provider_key_missing)', async () => {
      const t = await storing([]);
      for (let i = 0; i < 3; i++) {
        const r = await call(t, chat(`${i}`.repeat(3 * 1024 * 1024)));
        assert.equal(r.status, 400);
        assert.match(r.text, /provider_key_missing/);
        const row = await usageRecord(gw, r.id);
        assert.deepEqual([row.request_body, row.response_body, row.body_storage], [null, null, 'not_sent']);
      }
      const stored = await gw.service.deps.db.selectFrom('stored_body_bytes').selectAll().where('tenant_id', '=', t.tenantId).execute();
      assert.deepEqual(stored, []);
    });

    test('each body is cut at the cap on a character boundary, marked truncated in the record, the API and the console', async () => {
      const t = await storing();
      // Two-byte and four-byte characters throughout: a cut by bytes would split them.
      const content = 'é😀'.repeat(40_000);
      const body = chat(content);
      const r = await call(t, body);
      assert.equal(r.status, 200);
      const row = await usageRecord(gw, r.id);
      assert.equal(row.body_storage, 'request_truncated,response_truncated');
      for (const [stored, whole] of [[row.request_body!, body], [row.response_body!, r.text]] as const) {
        const bytes = Buffer.byteLength(stored);
        assert.ok(bytes <= MAX && bytes > MAX - 4, `cut within a character of the cap (${bytes})`);
        assert.ok(whole.startsWith(stored), 'the start of the body as sent, nothing else');
        assert.equal(Buffer.from(stored, 'utf8').toString('utf8'), stored, 'whole characters only');
      }
      const api = await detail(t, r.id);
      assert.equal(api.body_storage, 'request_truncated,response_truncated');
      assert.equal(api.request_body, row.request_body);
      const page = await fetch(`${gw.url}/requests/${r.id}`, { headers: { cookie: `gw_console=${t.session}` } });
      const html = await page.text();
      assert.equal(page.status, 200);
      assert.equal(html.match(/Truncated: only the first 64 KiB of this body were kept/g)?.length, 2, 'both bodies say so');
    });

    test('a stream is kept up to the cap too; a small call is kept whole', async () => {
      const t = await storing();
      gw.fake.setBehaviour({ chunks: 300 }, { requests: 1 });
      const streamed = await call(t, chat('w '.repeat(60_000), { stream: true }));
      assert.equal(streamed.status, 200);
      const row = await usageRecord(gw, streamed.id);
      assert.equal(row.body_storage, 'request_truncated,response_truncated');
      assert.ok(streamed.text.startsWith(row.response_body!), 'the stream as sent, cut');
      assert.ok(Buffer.byteLength(row.response_body!) <= MAX);
      const small = await call(t, chat('keep me whole'));
      const whole = await usageRecord(gw, small.id);
      assert.equal(whole.body_storage, 'stored');
      assert.equal(whole.request_body, chat('keep me whole'));
      assert.equal(whole.response_body, small.text);
    });

    test('an answer from the cache keeps its bodies: a real answer reached the client', async () => {
      const t = await storing();
      await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { cache: { enabled: true } } } });
      const first = await call(t, chat('cache me'));
      const second = await call(t, chat('cache me'));
      const row = await usageRecord(gw, second.id);
      assert.equal(row.cache_status, 'hit');
      assert.equal(row.body_storage, 'stored');
      assert.equal(row.response_body, second.text);
      assert.equal((await usageRecord(gw, first.id)).cache_status, 'miss');
    });

    test('past the quota calls are served and recorded, their bodies not kept; a replica reloading counts from the database; the retention frees room', async () => {
      const t = await storing();
      const big = chat('x'.repeat(200 * KIB));
      const results: string[] = [];
      for (let i = 0; i < 12; i++) {
        const r = await call(t, big);
        assert.equal(r.status, 200, 'served either way');
        results.push((await usageRecord(gw, r.id)).body_storage!);
      }
      // Each call keeps 64 KiB of request and 64 KiB of response: eight fill 1 MiB.
      assert.deepEqual(results, [...Array(8).fill('request_truncated,response_truncated'), ...Array(4).fill('quota_full')]);
      const full = await usageRecord(gw, (await call(t, chat('tiny'))).id);
      assert.deepEqual([full.request_body, full.response_body, full.body_storage], [null, null, 'quota_full']);
      const counted = await gw.service.deps.db.selectFrom('stored_body_bytes').select('bytes').where('tenant_id', '=', t.tenantId).execute();
      assert.equal(counted.reduce((sum, r) => sum + Number(r.bytes), 0), 8 * 2 * MAX);

      // The tenant's context is reloaded (60 s at most): the database's count keeps the quota full.
      clock.advance(61_000);
      assert.equal((await usageRecord(gw, (await call(t, chat('tiny'))).id)).body_storage, 'quota_full');
      // Once those days are past the retention, their bodies no longer count (their records are purged within the hour).
      clock.advance(gw.service.deps.config.usage.retentionMs + DAY);
      assert.equal((await usageRecord(gw, (await call(t, chat('tiny'))).id)).body_storage, 'stored');
    });

    test('the bytes counted per tenant are the bodies as stored, and rebuilding the count from the records finds the same', async () => {
      const t = await storing();
      for (const content of ['é'.repeat(3000), '😀'.repeat(10), 'plain']) await usageRecord(gw, (await call(t, chat(content))).id);
      const db = gw.service.deps.db;
      const records = await db.selectFrom('usage_records').select(['request_body', 'response_body']).where('tenant_id', '=', t.tenantId).execute();
      const expected = records.reduce((sum, r) => sum + Buffer.byteLength(r.request_body ?? '') + Buffer.byteLength(r.response_body ?? ''), 0);
      const sum = async () =>
        (await db.selectFrom('stored_body_bytes').select('bytes').where('tenant_id', '=', t.tenantId).execute()).reduce((s, r) => s + Number(r.bytes), 0);
      assert.equal(await sum(), expected);
      await rebuildStoredBodyBytes(db);
      assert.equal(await sum(), expected, 'migration 0010 counts the bodies stored before it the same way');
      // A record written again (a journal replayed after a crash) is not counted again.
      const replayed = usageRow({ request_id: `replayed-${kind}`, tenant_id: t.tenantId, created_at: clock.now(), request_body: 'é'.repeat(10), response_body: 'ok' });
      assert.equal(await insertUsageRecords(db, [replayed]), 1);
      assert.equal(await insertUsageRecords(db, [replayed, replayed]), 0);
      assert.equal(await sum(), expected + 22);
    });
  });
}
