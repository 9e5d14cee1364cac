import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { requestFilter, requestPageQuery } from '../../../src/gateway/usage/request-log.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

for (const kind of DB_KINDS) {
  describe(`the request log (${kind})`, () => {
    let gw: TestGateway;
    let session: string;
    let tenantId: string;
    const base = Date.UTC(2026, 2, 1, 10);
    before(async () => {
      gw = await startTestGateway(kind);
      ({ session, tenantId } = await gw.signup());
      // 7 records; r3a and r3b share a millisecond, so the cursor must break the tie by id.
      const times: [string, number][] = [['r1', 1], ['r2', 2], ['r3a', 3], ['r3b', 3], ['r4', 4], ['r5', 5], ['r6', 6]];
      for (const [id, minute] of times) {
        await gw.insertUsage({ tenant_id: tenantId, request_id: id, created_at: base + minute * 60_000, tag: minute % 2 ? 'odd' : 'even', stream: minute === 6 ? 1 : 0 });
      }
      await gw.insertUsage({
        tenant_id: tenantId,
        request_id: 'with-bodies',
        created_at: base - 3_600_000,
        request_body: '{"messages":[]}',
        response_body: '{"choices":[]}',
        route_reason: 'fallback after 429',
        attempts: JSON.stringify([
          { model: 'openai/gpt-4o', status: 429, errorCode: 'rate_limited', ms: 12.345 },
          { model: 'anthropic/claude-haiku-4-5', status: 200, ms: 30 },
        ]),
        saved_routing_usd: 0.5,
      });
    });
    after(() => gw.close());

    const list = (query = '') => gw.request('GET', `/api/v1/tenant/requests${query}`, { token: session });

    test('newest first, in pages joined by an opaque cursor, ties broken by id, nothing skipped or repeated', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r = await list(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(r.status, 200);
        seen.push(...r.body.requests.map((e: { request_id: string }) => e.request_id));
        cursor = r.body.next_cursor;
        pages++;
      } while (cursor);
      assert.deepEqual(seen, ['r6', 'r5', 'r4', 'r3b', 'r3a', 'r2', 'r1', 'with-bodies']);
      assert.equal(pages, 3);
    });

    test('entries carry the usage metadata, never the bodies; the default page is 50', async () => {
      const r = await list();
      assert.equal(r.body.requests.length, 8);
      assert.equal(r.body.next_cursor, null);
      const first = r.body.requests[0];
      assert.equal(first.request_id, 'r6');
      assert.equal(first.stream, true);
      assert.equal(first.created_at, new Date(base + 6 * 60_000).toISOString());
      assert.equal(first.model_used, 'openai/gpt-4o-mini');
      assert.ok(!('request_body' in first) && !('tenant_id' in first));
      assert.ok(!r.text.includes('messages'));
    });

    test('the same filters as the usage totals', async () => {
      const odd = await list('?tag=odd');
      assert.deepEqual(odd.body.requests.map((e: { request_id: string }) => e.request_id), ['r5', 'r3b', 'r3a', 'r1']);
      const window = await list(`?from=${base + 2 * 60_000}&to=${new Date(base + 4 * 60_000).toISOString()}`);
      assert.deepEqual(window.body.requests.map((e: { request_id: string }) => e.request_id), ['r3b', 'r3a', 'r2']);
    });

    test('one request, with its bodies', async () => {
      const r = await gw.request('GET', '/api/v1/tenant/requests/with-bodies', { token: session });
      assert.equal(r.status, 200);
      assert.equal(r.body.request_body, '{"messages":[]}');
      assert.equal(r.body.response_body, '{"choices":[]}');
      assert.equal(r.body.route_reason, 'fallback after 429');
      assert.equal(r.body.saved_routing_usd, 0.5);
      assert.deepEqual(r.body.attempts, [
        { model: 'openai/gpt-4o', status: 429, error_code: 'rate_limited', ms: 12.35 },
        { model: 'anthropic/claude-haiku-4-5', status: 200, error_code: null, ms: 30 },
      ]);
      const plain = await gw.request('GET', '/api/v1/tenant/requests/r1', { token: session });
      assert.equal(plain.body.request_body, null);
      assert.equal(plain.body.attempts, null);
      assert.equal(plain.body.route_reason, null);
      const missing = await gw.request('GET', '/api/v1/tenant/requests/none', { token: session });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.code, 'request_not_found');
    });

    test('bad limit or cursor: 400 naming the field', async () => {
      for (const [query, code, field] of [
        ['?limit=0', 'invalid_limit', 'limit'],
        ['?limit=201', 'invalid_limit', 'limit'],
        ['?limit=ten', 'invalid_limit', 'limit'],
        ['?cursor=bm9wZQ', 'invalid_cursor', 'cursor'],
        ['?cursor=***', 'invalid_cursor', 'cursor'],
      ]) {
        const r = await list(query);
        assert.equal(r.status, 400, query);
        assert.equal(r.body.code, code, query);
        assert.equal(r.body.errors[0].field, field);
      }
      assert.equal((await list('?limit=200')).status, 200);
    });
  });

  describe(`the request log's status, cache and model filters (${kind})`, () => {
    let gw: TestGateway;
    let session: string;
    let tenantId: string;
    let other: { tenantId: string; session: string };
    const base = Date.UTC(2026, 2, 1, 10);
    // id, minute, status, cache status, model asked, model that answered
    const rows: [string, number, number, string, string, string | null][] = [
      ['ok-miss', 1, 200, 'miss', 'gpt-4o-mini', 'openai/gpt-4o-mini'],
      ['ok-hit', 2, 200, 'hit', 'gpt-4o-mini', 'openai/gpt-4o-mini'],
      ['limited', 3, 429, 'miss', 'openai/gpt-4o-mini', 'openai/gpt-4o-mini'],
      ['refused', 4, 400, 'bypass', 'gpt-4o-mini', null],
      ['upstream', 5, 502, 'miss', 'auto', 'anthropic/claude-haiku-4-5'],
      ['dedup', 6, 200, 'dedup', 'auto', 'openai/gpt-5-nano'],
      ['routed', 7, 200, 'miss', 'auto', 'openai/gpt-4o-mini'],
      ['timeout', 8, 504, 'bypass', 'claude-haiku-4-5', 'anthropic/claude-haiku-4-5'],
    ];
    before(async () => {
      gw = await startTestGateway(kind);
      ({ session, tenantId } = await gw.signup());
      other = await gw.signup();
      for (const [id, minute, status, cache_status, model_requested, model_used] of rows) {
        await gw.insertUsage({ tenant_id: tenantId, request_id: id, created_at: base + minute * 60_000, status, cache_status, model_requested, model_used });
        // The same shapes in another workspace: never listed.
        await gw.insertUsage({ tenant_id: other.tenantId, request_id: `other-${id}`, created_at: base + minute * 60_000, status, cache_status, model_requested, model_used });
      }
      // Three calls in one millisecond, matched by the model through either column: the cursor orders them by id.
      await gw.insertUsage({ tenant_id: tenantId, request_id: 'tie-a', created_at: base + 9 * 60_000, model_requested: 'gpt-4o-mini', model_used: 'openai/gpt-4o-mini' });
      await gw.insertUsage({ tenant_id: tenantId, request_id: 'tie-b', created_at: base + 9 * 60_000, model_requested: 'openai/gpt-4o-mini', model_used: 'openai/gpt-4o-mini' });
      await gw.insertUsage({ tenant_id: tenantId, request_id: 'tie-c', created_at: base + 9 * 60_000, model_requested: 'openai/gpt-4o-mini', model_used: null, status: 400 });
    });
    after(() => gw.close());

    const ids = async (query: string, token = session) => {
      const r = await gw.request('GET', `/api/v1/tenant/requests${query}`, { token });
      assert.equal(r.status, 200, `${query}: ${r.text}`);
      return r.body.requests.map((e: { request_id: string }) => e.request_id) as string[];
    };

    test('status: ok (2xx), error (any other), 4xx, 5xx or one code', async () => {
      assert.deepEqual(await ids('?status=ok'), ['tie-b', 'tie-a', 'routed', 'dedup', 'ok-hit', 'ok-miss']);
      assert.deepEqual(await ids('?status=error'), ['tie-c', 'timeout', 'upstream', 'refused', 'limited']);
      assert.deepEqual(await ids('?status=4xx'), ['tie-c', 'refused', 'limited']);
      assert.deepEqual(await ids('?status=5xx'), ['timeout', 'upstream']);
      assert.deepEqual(await ids('?status=429'), ['limited']);
      assert.deepEqual(await ids('?status=200'), ['tie-b', 'tie-a', 'routed', 'dedup', 'ok-hit', 'ok-miss']);
      assert.deepEqual(await ids('?status=418'), []);
    });

    test('cache_status: hit, miss, dedup or bypass', async () => {
      assert.deepEqual(await ids('?cache_status=hit'), ['ok-hit']);
      assert.deepEqual(await ids('?cache_status=dedup'), ['dedup']);
      assert.deepEqual(await ids('?cache_status=bypass'), ['timeout', 'refused']);
      assert.deepEqual(await ids('?cache_status=miss&status=error'), ['tie-c', 'upstream', 'limited']);
    });

    test('model: the one asked for or the one that answered, each call once, in pages across both', async () => {
      assert.deepEqual(await ids('?model=auto'), ['routed', 'dedup', 'upstream']);
      assert.deepEqual(await ids('?model=anthropic/claude-haiku-4-5'), ['timeout', 'upstream']);
      for (const model of ['openai/gpt-4o-mini', 'gpt-4o-mini']) {
        const expected = await ids(`?model=${model}&limit=200`);
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const r = await gw.request('GET', `/api/v1/tenant/requests?model=${model}&limit=1${cursor ? `&cursor=${cursor}` : ''}`, { token: session });
          seen.push(...r.body.requests.map((e: { request_id: string }) => e.request_id));
          cursor = r.body.next_cursor;
        } while (cursor);
        assert.deepEqual(seen, expected, model);
      }
      assert.deepEqual(await ids('?model=openai/gpt-4o-mini'), ['tie-c', 'tie-b', 'tie-a', 'routed', 'limited', 'ok-hit', 'ok-miss']);
      assert.deepEqual(await ids('?model=gpt-4o-mini'), ['tie-a', 'refused', 'ok-hit', 'ok-miss']);
    });

    test("an empty value is no filter; another workspace's records are never listed", async () => {
      assert.equal((await ids('?status=&cache_status=&model=&tag=&session_id=&key_id=&from=&to=')).length, 11);
      assert.deepEqual(await ids('?status=error', other.session), ['other-timeout', 'other-upstream', 'other-refused', 'other-limited']);
    });

    test('a bad status or cache_status: 400 naming the field; several bad fields: one 400 naming each', async () => {
      for (const [query, code, field] of [
        ['?status=oops', 'invalid_status', 'status'],
        ['?status=2xx', 'invalid_status', 'status'],
        ['?status=600', 'invalid_status', 'status'],
        ['?status=42', 'invalid_status', 'status'],
        ['?status=OK', 'invalid_status', 'status'],
        ['?cache_status=stale', 'invalid_cache_status', 'cache_status'],
        ['?cache_status=HIT', 'invalid_cache_status', 'cache_status'],
      ]) {
        const r = await gw.request('GET', `/api/v1/tenant/requests${query}`, { token: session });
        assert.equal(r.status, 400, query);
        assert.equal(r.body.code, code, query);
        assert.deepEqual(r.body.errors.map((e: { field: string }) => e.field), [field], query);
      }
      const several = await gw.request('GET', '/api/v1/tenant/requests?from=yesterday&to=2026-13-45&status=nope&cache_status=stale', { token: session });
      assert.equal(several.status, 400);
      assert.equal(several.body.code, 'invalid_time');
      assert.deepEqual(several.body.errors.map((e: { field: string }) => e.field), ['from', 'to', 'status', 'cache_status']);
      assert.match(several.body.detail, /from must be .*status must be .*cache_status must be/);
    });

    test('each filter is answered by its own index, newest first, without a sort (the plans)', async () => {
      const now = gw.clock.now();
      const cursor = Buffer.from(`${base}.x`).toString('base64url');
      const cases: [Record<string, string>, string][] = [
        [{}, 'usage_records_tenant_time'],
        [{ tag: 't' }, 'usage_records_tenant_tag'],
        [{ session_id: 's' }, 'usage_records_tenant_session'],
        [{ key_id: 'k' }, 'usage_records_tenant_key'],
        [{ cache_status: 'dedup' }, 'usage_records_tenant_cache'],
        [{ status: 'error' }, 'usage_records_tenant_errors'],
        [{ status: '504' }, 'usage_records_tenant_errors'],
        [{ status: '5xx' }, 'usage_records_tenant_errors'],
        [{ model: 'm' }, 'usage_records_tenant_model_used'],
        [{ model: 'm' }, 'usage_records_tenant_model_requested'],
      ];
      for (const [query, index] of cases) {
        for (const page of [undefined, cursor]) {
          const compiled = requestPageQuery(gw.deps.db, requestFilter(tenantId, query, now), page, 51).compile();
          const plan = await explain(compiled);
          // SQLite: "SEARCH usage_records USING INDEX …"; PostgreSQL: "Index Scan Backward using … on usage_records".
          assert.match(plan, new RegExp(`(USING (COVERING )?INDEX|using) ${index}\\b`), `${JSON.stringify(query)} ${page ? 'deep' : 'first'}: ${plan}`);
          // The model filter's two scans are each cut at a page, then merged; every other filter reads its index in order.
          if (query['model'] === undefined) assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, `${JSON.stringify(query)}: ${plan}`);
        }
      }
    });

    /** The plan of a query, as text; PostgreSQL's planner told to prefer any usable index (the test's tables are tiny). */
    async function explain(compiled: CompiledQuery): Promise<string> {
      if (kind === 'sqlite') {
        const plan = await gw.deps.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]));
        return plan.rows.map((r) => r.detail).join('\n');
      }
      return gw.deps.db.transaction().execute(async (trx) => {
        for (const setting of ['enable_seqscan', 'enable_bitmapscan', 'enable_sort']) await sql`select set_config(${setting}, 'off', true)`.execute(trx);
        const plan = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${compiled.sql}`, [...compiled.parameters]));
        return plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      });
    }
  });
}
