import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sha256 } from '../../../src/platform/crypto.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway } from '../../helpers/gateway.ts';

// The test gateway's clock: 2026-03-01T12:00Z.
const NOW = Date.UTC(2026, 2, 1, 12);

for (const kind of DB_KINDS) {
  describe(`limits on the control plane (${kind})`, () => {
    test("a key's limits: set, shown in the key list, replaced, cleared; every replica's key cache is told each time", async (t) => {
      const gw = await startTestGateway(kind);
      t.after(() => gw.close());
      const { session, apiKey, apiKeyId } = await gw.signup();
      const set = await gw.request('PATCH', `/api/v1/tenant/api-keys/${apiKeyId}`, {
        token: session,
        body: { limits: { requests_per_minute: 60, tokens_per_day: 1_000_000, usd_per_month: 25.5 } },
      });
      assert.equal(set.status, 200);
      assert.deepEqual(set.body.limits, { requests_per_minute: 60, tokens_per_day: 1_000_000, usd_per_month: 25.5 });
      assert.equal(set.body.id, apiKeyId);
      assert.deepEqual(gw.revoked, [sha256(apiKey)], 'the cached principal carries the limits: it is dropped everywhere');
      const list = await gw.request('GET', '/api/v1/tenant/api-keys', { token: session });
      assert.deepEqual(list.body.api_keys[0].limits, { requests_per_minute: 60, tokens_per_day: 1_000_000, usd_per_month: 25.5 });

      const replaced = await gw.request('PATCH', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session, body: { limits: { usd_per_month: 5 } } });
      assert.deepEqual(replaced.body.limits, { usd_per_month: 5 }, 'the limits sent replace the stored ones whole');
      const cleared = await gw.request('PATCH', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session, body: { limits: null } });
      assert.deepEqual(cleared.body.limits, {});
      assert.equal(gw.revoked.length, 3);

      const created = await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name: 'ci', limits: { requests_per_minute: 5 } } });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.limits, { requests_per_minute: 5 });
    });

    test('bad limits: 400 naming the field, nothing changed', async (t) => {
      const gw = await startTestGateway(kind);
      t.after(() => gw.close());
      const { session, apiKeyId } = await gw.signup();
      await gw.request('PATCH', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session, body: { limits: { requests_per_minute: 7 } } });
      const cases: [unknown, string][] = [
        [{ limits: { requests_per_minute: 0 } }, 'limits.requests_per_minute'],
        [{ limits: { requests_per_minute: 2.5 } }, 'limits.requests_per_minute'],
        [{ limits: { tokens_per_day: -1 } }, 'limits.tokens_per_day'],
        [{ limits: { usd_per_month: 'ten' } }, 'limits.usd_per_month'],
        [{ limits: { usd_per_month: 2e9 } }, 'limits.usd_per_month'],
        [{ limits: { rpm: 5 } }, 'limits.rpm'],
        [{}, 'limits'],
      ];
      for (const [body, field] of cases) {
        const r = await gw.request('PATCH', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session, body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.errors[0].field, field, JSON.stringify(body));
      }
      const post = await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name: 'x', limits: { tokens_per_days: 5 } } });
      assert.equal(post.status, 400);
      assert.equal(post.body.errors[0].field, 'limits.tokens_per_days');
      const tenant = await gw.request('PATCH', '/api/v1/tenant', { token: session, body: { settings: { limits: { usd_per_month: -5 } } } });
      assert.equal(tenant.status, 400);
      assert.equal(tenant.body.errors[0].field, 'settings.limits.usd_per_month');
      const list = await gw.request('GET', '/api/v1/tenant/api-keys', { token: session });
      assert.deepEqual(list.body.api_keys[0].limits, { requests_per_minute: 7 });
    });

    test("another tenant's key, a revoked key, an unknown id: 404, and the key untouched", async (t) => {
      const gw = await startTestGateway(kind);
      t.after(() => gw.close());
      const a = await gw.signup();
      const b = await gw.signup();
      const foreign = await gw.request('PATCH', `/api/v1/tenant/api-keys/${a.apiKeyId}`, { token: b.session, body: { limits: { requests_per_minute: 1 } } });
      assert.equal(foreign.status, 404);
      assert.equal(foreign.body.code, 'api_key_not_found');
      const unknown = await gw.request('PATCH', '/api/v1/tenant/api-keys/no-such-key', { token: a.session, body: { limits: null } });
      assert.equal(unknown.status, 404);
      const list = await gw.request('GET', '/api/v1/tenant/api-keys', { token: a.session });
      assert.deepEqual(list.body.api_keys[0].limits, {});
      await gw.request('DELETE', `/api/v1/tenant/api-keys/${a.apiKeyId}`, { token: a.session });
      const revoked = await gw.request('PATCH', `/api/v1/tenant/api-keys/${a.apiKeyId}`, { token: a.session, body: { limits: { requests_per_minute: 1 } } });
      assert.equal(revoked.status, 404);
      assert.equal((await gw.request('GET', '/api/v1/tenant/limits')).status, 401, 'consumption needs a session');
    });

    test("GET /api/v1/tenant/limits: each limit with its window's consumption, the tenant's and each key's, from the usage records", async (t) => {
      const gw = await startTestGateway(kind);
      t.after(() => gw.close());
      const { session, tenantId, apiKeyId } = await gw.signup();
      const second = (await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name: 'second' } })).body;
      const rows = [
        // Today (2026-03-01), this key: counted for the key and the tenant, tokens and USD.
        { request_id: 'r1', key_id: apiKeyId, created_at: NOW - 3_600_000, prompt_tokens: 100, completion_tokens: 20, cost_usd: 0.5 },
        // Today, the other key: the tenant's only.
        { request_id: 'r2', key_id: second.id, created_at: NOW - 60_000, prompt_tokens: 10, completion_tokens: 5, cost_usd: 0.25 },
        // A cache hit: free.
        { request_id: 'r3', key_id: apiKeyId, created_at: NOW - 1000, prompt_tokens: 500, completion_tokens: 500, cost_usd: 0, cache_status: 'hit' },
        // Yesterday (last month, too): in no window.
        { request_id: 'r4', key_id: apiKeyId, created_at: NOW - 86_400_000, prompt_tokens: 9999, completion_tokens: 1, cost_usd: 9 },
      ];
      for (const row of rows) await gw.insertUsage({ tenant_id: tenantId, ...row });
      // Another tenant's records count for nobody here.
      const other = await gw.signup();
      await gw.insertUsage({ tenant_id: other.tenantId, request_id: 'x1', key_id: other.apiKeyId, created_at: NOW - 1000, prompt_tokens: 77, cost_usd: 7 });

      await gw.request('PATCH', '/api/v1/tenant', { token: session, body: { settings: { limits: { tokens_per_day: 1000, usd_per_month: 10, requests_per_minute: 100 } } } });
      await gw.request('PATCH', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session, body: { limits: { tokens_per_day: 500 } } });
      const r = await gw.request('GET', '/api/v1/tenant/limits', { token: session });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body.tenant.limits, { tokens_per_day: 1000, usd_per_month: 10, requests_per_minute: 100 });
      assert.deepEqual(r.body.tenant.usage, {
        requests_per_minute: { limit: 100, used: 0, reserved: 0, remaining: 100, window_start: '2026-03-01T12:00:00.000Z', resets_at: '2026-03-01T12:01:00.000Z' },
        tokens_per_day: { limit: 1000, used: 135, reserved: 0, remaining: 865, window_start: '2026-03-01T00:00:00.000Z', resets_at: '2026-03-02T00:00:00.000Z' },
        usd_per_month: { limit: 10, used: 0.75, reserved: 0, remaining: 9.25, window_start: '2026-03-01T00:00:00.000Z', resets_at: '2026-04-01T00:00:00.000Z' },
      });
      const keys = Object.fromEntries(r.body.api_keys.map((k: { id: string }) => [k.id, k]));
      assert.deepEqual(keys[apiKeyId].limits, { tokens_per_day: 500 });
      assert.deepEqual(Object.keys(keys[apiKeyId].usage), ['tokens_per_day'], 'only the limits set');
      assert.equal(keys[apiKeyId].usage.tokens_per_day.used, 120);
      assert.equal(keys[apiKeyId].usage.tokens_per_day.remaining, 380);
      assert.deepEqual(keys[second.id], { id: second.id, name: 'second', prefix: second.prefix, limits: {}, usage: {} });
    });
  });
}
