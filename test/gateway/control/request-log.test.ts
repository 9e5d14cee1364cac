import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
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
}
