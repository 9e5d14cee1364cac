import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

const DAY = 86_400_000;

for (const kind of DB_KINDS) {
  describe(`GET /api/v1/tenant/usage (${kind})`, () => {
    let gw: TestGateway;
    let session: string;
    let tenantId: string;
    // 2026-03-01T12:00Z is the clock's start: two records on Feb 28 (one just before midnight UTC), three on Mar 1.
    const t0 = Date.UTC(2026, 2, 1, 12);
    before(async () => {
      gw = await startTestGateway(kind);
      ({ session, tenantId } = await gw.signup());
      const rows = [
        { request_id: 'r1', created_at: Date.UTC(2026, 1, 28, 10), tag: 'a', key_id: 'k1', session_id: 's1', prompt_tokens: 100, completion_tokens: 10, cost_usd: 0.5, saved_provider_cache_usd: -0.125 },
        { request_id: 'r2', created_at: Date.UTC(2026, 1, 28, 23, 59, 59, 999), tag: 'b', key_id: 'k1', session_id: 's1', prompt_tokens: 200, completion_tokens: 20, cost_usd: 1.25, cache_status: 'hit', saved_tokens: 220, cost_saved_usd: 1, saved_cache_usd: 1 },
        { request_id: 'r3', created_at: Date.UTC(2026, 2, 1), tag: 'a', key_id: 'k2', session_id: null, prompt_tokens: 300, completion_tokens: 30, cost_usd: 2, model_requested: 'auto', model_used: 'anthropic/claude-haiku', saved_provider_cache_usd: 0.5 },
        { request_id: 'r4', created_at: Date.UTC(2026, 2, 1, 11), tag: null, key_id: 'k2', session_id: 's2', prompt_tokens: 1, completion_tokens: 1, cost_usd: 0.25, cache_status: 'dedup', saved_tokens: 2, cost_saved_usd: 0.25, saved_cache_usd: 0.1, saved_compaction_usd: 0.05, saved_routing_usd: 0.06, saved_prompt_cache_usd: 0.04 },
        { request_id: 'r5', created_at: Date.UTC(2026, 0, 1), tag: 'a', key_id: 'k1', prompt_tokens: 9999, cost_usd: 99 }, // older than 30 days
      ];
      for (const row of rows) await gw.insertUsage({ tenant_id: tenantId, ...row });
    });
    after(() => gw.close());

    const usage = (query = '') => gw.request('GET', `/api/v1/tenant/usage${query}`, { token: session });

    test('totals over the last 30 days by default', async () => {
      const r = await usage();
      assert.equal(r.status, 200);
      assert.equal(r.body.to, new Date(t0).toISOString());
      assert.equal(r.body.from, new Date(t0 - 30 * DAY).toISOString());
      assert.deepEqual(r.body.totals, {
        requests: 4,
        errors: 0,
        prompt_tokens: 601,
        completion_tokens: 61,
        tokens_saved: 222,
        cost_usd: 4,
        cost_saved_usd: 1.25,
        cost_without_gateway_usd: 5.25,
        saved_cache_usd: 1,
        saved_dedup_usd: 0.1,
        saved_compaction_usd: 0.05,
        saved_routing_usd: 0.06,
        saved_prompt_cache_usd: 0.04,
        // The provider's own caching (r1 paid a write premium, r3 read its cache): beside cost_saved_usd, not in it.
        saved_provider_cache_usd: 0.375,
        cache_hits: 1,
        dedup_hits: 1,
        cache_misses: 2,
        cache_hit_rate: 0.5,
      });
      assert.equal(r.body.groups, undefined);
    });

    test('from and to as ISO 8601 or epoch milliseconds: from inclusive, to exclusive', async () => {
      const iso = await usage('?from=2026-03-01T00:00:00Z&to=2026-03-01T11:00:00Z');
      assert.equal(iso.body.totals.requests, 1, 'r3 only: r4 is at the exclusive end');
      const ms = await usage(`?from=${Date.UTC(2026, 2, 1)}&to=${Date.UTC(2026, 2, 1, 11)}`);
      assert.deepEqual(ms.body.totals, iso.body.totals);
      const all = await usage('?from=2025-12-01');
      assert.equal(all.body.totals.requests, 5);
    });

    test('filters: tag, session_id, key_id, model (asked for or answered)', async () => {
      assert.equal((await usage('?tag=a')).body.totals.requests, 2);
      assert.equal((await usage('?session_id=s1')).body.totals.cost_usd, 1.75);
      assert.equal((await usage('?key_id=k2')).body.totals.prompt_tokens, 301);
      assert.equal((await usage('?model=auto')).body.totals.requests, 1);
      assert.equal((await usage('?model=anthropic/claude-haiku')).body.totals.requests, 1);
      assert.equal((await usage('?model=gpt-4o-mini')).body.totals.requests, 3);
      assert.equal((await usage('?tag=&session_id=&model=&key_id=')).body.totals.requests, 4, 'an empty value is no filter');
      assert.deepEqual((await usage('?tag=none-such')).body.totals, {
        requests: 0,
        errors: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        tokens_saved: 0,
        cost_usd: 0,
        cost_saved_usd: 0,
        cost_without_gateway_usd: 0,
        saved_cache_usd: 0,
        saved_dedup_usd: 0,
        saved_compaction_usd: 0,
        saved_routing_usd: 0,
        saved_prompt_cache_usd: 0,
        saved_provider_cache_usd: 0,
        cache_hits: 0,
        dedup_hits: 0,
        cache_misses: 0,
        cache_hit_rate: null,
      });
    });

    test('grouped by day (UTC, the last millisecond before midnight on its own day), tag, session, model and key', async () => {
      const day = await usage('?group_by=day');
      type Day = { key: string; requests: number; cost_usd: number; cost_saved_usd: number; saved_provider_cache_usd: number };
      assert.deepEqual(day.body.groups.map((g: Day) => [g.key, g.requests, g.cost_usd, g.cost_saved_usd, g.saved_provider_cache_usd]), [
        ['2026-02-28', 2, 1.75, 1, -0.125],
        ['2026-03-01', 2, 2.25, 0.25, 0.5],
      ]);
      const hour = await usage('?group_by=hour&from=2026-03-01');
      assert.deepEqual(hour.body.groups.map((g: Day) => [g.key, g.saved_provider_cache_usd]), [
        ['2026-03-01T00:00:00.000Z', 0.5],
        ['2026-03-01T11:00:00.000Z', 0],
      ]);
      const keyed = (groups: { key: string | null; requests: number }[]) => Object.fromEntries(groups.map((g) => [String(g.key), g.requests]));
      assert.deepEqual(keyed((await usage('?group_by=tag')).body.groups), { a: 2, b: 1, null: 1 });
      assert.deepEqual(keyed((await usage('?group_by=session')).body.groups), { s1: 2, s2: 1, null: 1 });
      assert.deepEqual(keyed((await usage('?group_by=model')).body.groups), { 'openai/gpt-4o-mini': 3, 'anthropic/claude-haiku': 1 });
      const byKey = (await usage('?group_by=key')).body.groups;
      assert.deepEqual(byKey.map((g: { key: string }) => g.key), ['k2', 'k1'], 'largest cost first');
      assert.equal(byKey[0].cache_hits, 0);
      assert.equal(byKey[0].dedup_hits, 1);
      assert.equal(byKey[1].cache_hits, 1);
    });

    test('bad parameters: 400 naming the field', async () => {
      const cases: [string, string, string][] = [
        ['?from=yesterday', 'invalid_time', 'from'],
        ['?to=2026-13-45', 'invalid_time', 'to'],
        ['?from=2026-03-02&to=2026-03-01', 'invalid_range', 'from'],
        ['?group_by=week', 'validation_failed', 'group_by'],
      ];
      for (const [query, code, field] of cases) {
        const r = await usage(query);
        assert.equal(r.status, 400, query);
        assert.equal(r.body.code, code, query);
        assert.equal(r.body.errors[0].field, field, query);
      }
    });
  });
}
