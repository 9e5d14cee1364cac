import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, test } from 'node:test';
import { DB_KINDS, type DbKind } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, startReplica } from '../../helpers/gateway-service.ts';
import {
  ask,
  BODY,
  count,
  ESTIMATE_TOKENS,
  ESTIMATE_USD,
  MAX_TOKENS,
  newClock,
  PROMPT,
  SPENT_COMPLETION,
  SPENT_USD,
  START,
  until,
} from './budget-calls.ts';

async function live(kind: DbKind, t: { after: (fn: () => Promise<void>) => void }) {
  const clock = newClock();
  // Failures reach the client as they are (retries and fallbacks have their own suite: fallback.test.ts).
  const gw = await startLiveGateway(kind, { GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0' }, { clock });
  t.after(() => gw.close());
  const tenant = await gw.tenant({ providers: ['openai'] });
  return { gw, tenant, clock };
}

const setTenantLimits = async (gw: LiveGateway, tenant: LiveTenant, limits: Record<string, number> | null) => {
  const r = await gw.api('/api/v1/tenant', { method: 'PATCH', token: tenant.session, body: { settings: { limits } } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
};

const setKeyLimits = async (gw: LiveGateway, tenant: LiveTenant, keyId: string, limits: Record<string, number> | null) => {
  const r = await gw.api(`/api/v1/tenant/api-keys/${keyId}`, { method: 'PATCH', token: tenant.session, body: { limits } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
};

const limitsOf = async (gw: LiveGateway, tenant: LiveTenant) => (await gw.api('/api/v1/tenant/limits', { token: tenant.session })).body;

for (const kind of DB_KINDS) {
  describe(`budgets and limits (${kind})`, () => {
    test('50 concurrent calls against a USD budget that allows 10: exactly 10 reach the provider, 40 get 429 naming the tenant', async (t) => {
      const { gw, tenant } = await live(kind, t);
      await setTenantLimits(gw, tenant, { usd_per_month: ESTIMATE_USD * 10.5 });
      // Slow answers that spend their whole estimate: whether a call is decided while the first ten are
      // in flight (held) or after they settled (used), the budget has room for exactly ten.
      gw.fake.setBehaviour({ latencyMs: 300, promptTokens: PROMPT, completionTokens: MAX_TOKENS });
      const outcomes = await Promise.all(Array.from({ length: 50 }, () => ask(tenant.openai)));
      assert.equal(count(outcomes, 200), 10);
      assert.equal(count(outcomes, 429), 40);
      assert.equal(gw.fake.calls.count, 10, 'no refused call reached the provider');
      const refused = outcomes.find((o) => o.status === 429)!;
      assert.equal(refused.code, 'budget_exceeded');
      assert.equal(refused.type, 'insufficient_quota');
      assert.match(refused.message!, /your tenant \(all its API keys together\) allows \$[\d.]+ per month/);
      assert.equal(refused.headers.get('x-gateway-limit-exceeded'), 'tenant.usd_per_month');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      assert.ok(Math.abs(Number(refused.headers.get('x-ratelimit-limit-usd')) - ESTIMATE_USD * 10.5) < 1e-9);
      assert.ok(Number(refused.headers.get('x-ratelimit-remaining-usd')) < ESTIMATE_USD);
      assert.match(refused.headers.get('x-ratelimit-reset-usd')!, /^\d+h\d+m\d+s$/);
      const ok = outcomes.find((o) => o.status === 200)!;
      assert.ok(ok.headers.get('x-ratelimit-remaining-usd'), 'an admitted call is told what is left too');
      // Settled at what the ten really cost, nothing held.
      const usage = (await limitsOf(gw, tenant)).tenant.usage.usd_per_month;
      assert.ok(Math.abs(usage.used - 10 * ESTIMATE_USD) < 1e-12, `used ${usage.used}`);
      assert.equal(usage.reserved, 0);
    });

    test('50 concurrent calls against 10 requests per minute on the key: exactly 10 pass; the 429s name the key, with Retry-After and x-ratelimit-*', async (t) => {
      const { gw, tenant } = await live(kind, t);
      await setKeyLimits(gw, tenant, tenant.apiKeyId, { requests_per_minute: 10 });
      gw.fake.setBehaviour({ latencyMs: 200 });
      const outcomes = await Promise.all(Array.from({ length: 50 }, () => ask(tenant.openai)));
      assert.equal(count(outcomes, 200), 10);
      assert.equal(gw.fake.calls.count, 10);
      const admitted = outcomes.filter((o) => o.status === 200);
      assert.deepEqual(admitted.map((o) => Number(o.headers.get('x-ratelimit-remaining-requests'))).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      assert.equal(admitted[0]!.headers.get('x-ratelimit-limit-requests'), '10');
      const refused = outcomes.filter((o) => o.status === 429);
      assert.equal(refused.length, 40);
      for (const r of refused) {
        assert.equal(r.code, 'rate_limit_exceeded');
        assert.equal(r.type, 'requests');
        assert.match(r.message!, /this API key allows 10 requests per minute\. Retry after 30 s\./);
        assert.equal(r.headers.get('retry-after'), '30', 'the clock is 30 s into its minute');
        assert.equal(r.headers.get('x-ratelimit-limit-requests'), '10');
        assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '0');
        assert.equal(r.headers.get('x-ratelimit-reset-requests'), '30s');
        assert.equal(r.headers.get('x-gateway-limit-exceeded'), 'key.requests_per_minute');
      }
    });

    test("a key's limit and its tenant's: each refusal names the one that was reached", async (t) => {
      const { gw, tenant } = await live(kind, t);
      await setTenantLimits(gw, tenant, { requests_per_minute: 3 });
      await setKeyLimits(gw, tenant, tenant.apiKeyId, { requests_per_minute: 2 });
      const second = await gw.api('/api/v1/tenant/api-keys', { token: tenant.session, body: { name: 'second' } });
      const other = new (await import('openai')).default({ baseURL: `${gw.url}/v1`, apiKey: second.body.key, maxRetries: 0 });
      assert.equal((await ask(tenant.openai)).status, 200);
      assert.equal((await ask(tenant.openai)).status, 200);
      const byKey = await ask(tenant.openai);
      assert.equal(byKey.status, 429);
      assert.match(byKey.message!, /this API key allows 2 requests per minute/);
      assert.equal(byKey.headers.get('x-gateway-limit-exceeded'), 'key.requests_per_minute');
      assert.equal((await ask(other)).status, 200, 'the second key has no limit of its own; the tenant has room for one more');
      const byTenant = await ask(other);
      assert.equal(byTenant.status, 429);
      assert.match(byTenant.message!, /your tenant \(all its API keys together\) allows 3 requests per minute/);
      assert.equal(byTenant.headers.get('x-gateway-limit-exceeded'), 'tenant.requests_per_minute');
    });

    test('windows start over with the clock: the next minute, the next UTC day, the next calendar month', async (t) => {
      const { gw, tenant, clock } = await live(kind, t);
      // Each call really spends its whole estimate: one fits per window. A tenant per limit, so that no
      // limit is seeded with the calls made while testing another.
      gw.fake.setBehaviour({ promptTokens: PROMPT, completionTokens: 100 });
      await setKeyLimits(gw, tenant, tenant.apiKeyId, { requests_per_minute: 1 });
      assert.equal((await ask(tenant.openai)).status, 200);
      assert.equal((await ask(tenant.openai)).status, 429);
      clock.advance(30_000);
      assert.equal((await ask(tenant.openai)).status, 200, 'a new minute');

      const daily = await gw.tenant({ providers: ['openai'] });
      await setKeyLimits(gw, daily, daily.apiKeyId, { tokens_per_day: Math.floor(ESTIMATE_TOKENS * 1.5) });
      assert.equal((await ask(daily.openai)).status, 200);
      const day = await ask(daily.openai);
      assert.equal(day.status, 429);
      assert.equal(day.code, 'token_limit_exceeded');
      const midnight = Date.UTC(new Date(START).getUTCFullYear(), 2, 16);
      assert.match(day.message!, new RegExp(`It resets at ${new Date(midnight).toISOString()}`));
      assert.equal(day.headers.get('retry-after'), String(Math.ceil((midnight - clock.now()) / 1000)));
      clock.advance(midnight - clock.now());
      assert.equal((await ask(daily.openai)).status, 200, 'a new day');

      const monthly = await gw.tenant({ providers: ['openai'] });
      await setTenantLimits(gw, monthly, { usd_per_month: ESTIMATE_USD * 1.5 });
      assert.equal((await ask(monthly.openai)).status, 200);
      assert.equal((await ask(monthly.openai)).status, 429);
      clock.advance(Date.UTC(new Date(START).getUTCFullYear(), 3, 1) - clock.now());
      assert.equal((await ask(monthly.openai)).status, 200, 'a new month');
    });

    test('reserved at max_tokens, settled at what was spent: a budget that holds 2 estimates lets 10 cheap calls through one after another', async (t) => {
      const { gw, tenant } = await live(kind, t);
      await setTenantLimits(gw, tenant, { usd_per_month: ESTIMATE_USD * 2.5, tokens_per_day: ESTIMATE_TOKENS * 2 + 50 });
      gw.fake.setBehaviour({ promptTokens: PROMPT, completionTokens: SPENT_COMPLETION });
      for (let i = 0; i < 10; i++) assert.equal((await ask(tenant.openai)).status, 200, `call ${i + 1}`);
      const usage = (await limitsOf(gw, tenant)).tenant.usage;
      assert.equal(usage.tokens_per_day.used, 10 * (PROMPT + SPENT_COMPLETION));
      assert.ok(Math.abs(usage.usd_per_month.used - 10 * SPENT_USD) < 1e-12);
      // A request whose own estimate exceeds the limit is told to lower max_tokens.
      const huge = await ask(tenant.openai, { ...BODY, max_tokens: ESTIMATE_TOKENS * 3 });
      assert.equal(huge.status, 429);
      assert.match(huge.message!, /lower max_tokens/);
    });

    test('a cache hit costs the budget nothing: only the call that went upstream is counted', async (t) => {
      const clock = newClock();
      const gw = await startLiveGateway(kind, { GATEWAY_CACHE_ENABLED: 'true' }, { clock });
      t.after(() => gw.close());
      const tenant = await gw.tenant({ providers: ['openai'] });
      await setTenantLimits(gw, tenant, { usd_per_month: ESTIMATE_USD * 1.5, tokens_per_day: Math.floor(ESTIMATE_TOKENS * 1.5) });
      gw.fake.setBehaviour({ promptTokens: PROMPT, completionTokens: SPENT_COMPLETION });
      for (let i = 0; i < 5; i++) assert.equal((await ask(tenant.openai)).status, 200, `call ${i}`);
      assert.equal(gw.fake.calls.count, 1, 'one call upstream, four hits');
      await until(async () => (await limitsOf(gw, tenant)).tenant.usage.usd_per_month.reserved === 0, 'the last settle');
      const usage = (await limitsOf(gw, tenant)).tenant.usage;
      assert.ok(Math.abs(usage.usd_per_month.used - SPENT_USD) < 1e-12, `used ${usage.usd_per_month.used}`);
      assert.equal(usage.tokens_per_day.used, PROMPT + SPENT_COMPLETION);
    });

    test('a failed call settles at 0 (nothing spent); the budget is whole again', async (t) => {
      const { gw, tenant } = await live(kind, t);
      await setTenantLimits(gw, tenant, { usd_per_month: ESTIMATE_USD * 1.5, tokens_per_day: ESTIMATE_TOKENS + 1 });
      gw.fake.setBehaviour({ fault: '500' }, { requests: 1 });
      const failed = await ask(tenant.openai);
      assert.ok(failed.status >= 500, `status ${failed.status}`);
      assert.ok(failed.headers.get('x-ratelimit-remaining-tokens'), 'the limit headers go on a failed answer too');
      const usage = (await limitsOf(gw, tenant)).tenant.usage;
      assert.deepEqual([usage.usd_per_month.used, usage.usd_per_month.reserved, usage.tokens_per_day.used, usage.tokens_per_day.reserved], [0, 0, 0, 0]);
      assert.equal((await ask(tenant.openai)).status, 200, 'the whole budget is still there');
    });

    test('a client that leaves mid-stream: the reservation is released, and a stream carries the headers in its head', async (t) => {
      const { gw, tenant } = await live(kind, t);
      await setTenantLimits(gw, tenant, { tokens_per_day: 100_000, requests_per_minute: 100 });
      gw.fake.setBehaviour({ chunkDelayMs: 100, chunks: 30 }, { requests: 1 });
      const body = JSON.stringify({ ...BODY, stream: true });
      const head = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const req = request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
        });
        req.on('response', (res) => {
          res.once('data', () => {
            resolve(res.headers);
            req.destroy();
          });
        });
        req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
        req.end(body);
      });
      assert.equal(head['x-ratelimit-limit-tokens'], '100000');
      assert.equal(head['x-ratelimit-remaining-requests'], '99');
      await until(async () => {
        const usage = (await limitsOf(gw, tenant)).tenant.usage;
        return usage.tokens_per_day.reserved === 0 && usage.requests_per_minute.reserved === 0;
      }, 'the reservation to be released');
      const usage = (await limitsOf(gw, tenant)).tenant.usage;
      assert.equal(usage.requests_per_minute.used, 1, 'the request counts');
      assert.ok(usage.tokens_per_day.used >= PROMPT, 'and its unfinished answer what it spent: the prompt and what was relayed (budgets-unfinished-streams.test.ts)');
    });

    test('no limits anywhere: no x-ratelimit headers, nothing counted', async (t) => {
      const { gw, tenant } = await live(kind, t);
      const r = await ask(tenant.openai);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-ratelimit-limit-requests'), null);
      assert.deepEqual((await limitsOf(gw, tenant)).tenant, { limits: {}, usage: {} });
    });

    test('calls made before a limit was set count against it (seeded from the usage records)', async (t) => {
      const { gw, tenant } = await live(kind, t);
      gw.fake.setBehaviour({ promptTokens: PROMPT, completionTokens: SPENT_COMPLETION });
      for (let i = 0; i < 3; i++) assert.equal((await ask(tenant.openai)).status, 200);
      await gw.service.dataPlane.usage.flush();
      await setKeyLimits(gw, tenant, tenant.apiKeyId, { tokens_per_day: 3 * (PROMPT + SPENT_COMPLETION) + ESTIMATE_TOKENS });
      const usage = (await limitsOf(gw, tenant)).api_keys[0].usage.tokens_per_day;
      assert.equal(usage.used, 3 * (PROMPT + SPENT_COMPLETION));
      assert.equal((await ask(tenant.openai)).status, 200, 'room for exactly one more estimate');
      assert.equal((await ask(tenant.openai)).status, 429);
    });
  });
}

describe('budgets survive a restart of a single-process gateway (SQLite)', () => {
  test('the USD per month and tokens per day spent before the restart still count after it', async (t) => {
    const clock = newClock();
    const a = await startLiveGateway('sqlite', {}, { clock });
    // Closes the restarted replica too (startReplica), then the first service (closed already: it waits for nothing).
    t.after(() => a.close());
    const tenant = await a.tenant({ providers: ['openai'] });
    await setTenantLimits(a, tenant, { usd_per_month: ESTIMATE_USD * 1.5, tokens_per_day: 1_000_000 });
    a.fake.setBehaviour({ promptTokens: PROMPT, completionTokens: 100 });
    assert.equal((await ask(tenant.openai)).status, 200);
    await a.service.close();

    const { url } = await startReplica(a, {}, { clock });
    const res = await fetch(`${url}/api/v1/tenant/limits`, { headers: { authorization: `Bearer ${tenant.session}` } });
    const usage = ((await res.json()) as { tenant: { usage: Record<string, { used: number }> } }).tenant.usage;
    assert.ok(Math.abs(usage['usd_per_month']!.used - ESTIMATE_USD) < 1e-12, 'the month so far, from the usage records');
    assert.equal(usage['tokens_per_day']!.used, ESTIMATE_TOKENS);
    const OpenAI = (await import('openai')).default;
    const again = await ask(new OpenAI({ baseURL: `${url}/v1`, apiKey: tenant.apiKey, maxRetries: 0 }));
    assert.equal(again.status, 429, 'the budget did not start over');
    assert.equal(again.code, 'budget_exceeded');
  });
});
