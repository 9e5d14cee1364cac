import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import { costUsd } from '../../../src/gateway/catalog/cost.ts';
import { DB_KINDS, POSTGRES_URL, REDIS_URL } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, startReplica } from '../../helpers/gateway-service.ts';
import { usageRecord, setRouting } from './routing-fixture.ts';

const EASY = [{ role: 'user' as const, content: 'What is the capital of Australia?' }];
const HARD = [
  {
    role: 'user' as const,
    content: 'Why does this deadlock under load? Fix it and explain the race.\n```go\nfunc (c *Cache) Get(k string) string {\n  c.mu.RLock()\n  c.mu.Lock()\n}\n```',
  },
];
const usage = { promptTokens: 1000, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 200, reasoningTokens: 0 };
const tierOf = (model: string) => {
  const slash = model.indexOf('/');
  return catalogEntry(model.slice(0, slash), model.slice(slash + 1))?.tier;
};
const sentModel = (gw: LiveGateway) => (gw.fake.calls.last()!.body as { model: string }).model;

for (const kind of DB_KINDS) {
  describe(`routing through the OpenAI SDK (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      gw = await startLiveGateway(kind, { GATEWAY_RETRY_BASE_DELAY_MS: '1' });
      t = await gw.tenant();
    });
    after(() => gw.close());

    const ask = (model: string, messages: typeof EASY, headers: Record<string, string> = {}) =>
      t.openai.chat.completions.create({ model, messages }, { headers }).withResponse();

    test('GET /v1/models lists auto first', async () => {
      const list = await t.openai.models.list();
      assert.equal(list.data[0]?.id, 'auto');
    });

    test('auto: an easy prompt goes to the cheapest light model, a hard one to a capable tier; headers say which and why', async () => {
      gw.fake.setBehaviour({ promptTokens: 1000, completionTokens: 200 }, { requests: 1 });
      const cheap = await ask('auto', EASY);
      assert.equal(cheap.response.headers.get('x-gateway-model'), 'openai/gpt-5-nano');
      assert.equal(sentModel(gw), 'gpt-5-nano', 'the provider got the chosen model');
      assert.equal(cheap.response.headers.get('x-gateway-route-reason'), 'tier=1; cheapest fit openai/gpt-5-nano');
      assert.equal(cheap.data.choices[0]?.message.content, 'echo: What is the capital of Australia?');

      const row = await usageRecord(gw, cheap.response.headers.get('x-gateway-request-id')!);
      assert.equal(row.model_requested, 'auto');
      assert.equal(row.model_used, 'openai/gpt-5-nano');
      assert.equal(row.route_reason, 'tier=1; cheapest fit openai/gpt-5-nano');
      // auto's baseline: the cheapest model of the highest tier among the tenant's providers (openai/o4-mini here).
      const nano = catalogEntry('openai', 'gpt-5-nano')!;
      const o4mini = catalogEntry('openai', 'o4-mini')!;
      const expected = costUsd(usage, o4mini)! - costUsd(usage, nano)!;
      assert.ok(Math.abs(row.saved_routing_usd - expected) < 1e-12, `${row.saved_routing_usd} vs ${expected}`);
      assert.ok(Math.abs(Number(cheap.response.headers.get('x-gateway-cost-saved')) - expected) < 1e-9);

      const capable = await ask('auto', HARD);
      const model = capable.response.headers.get('x-gateway-model')!;
      assert.ok((tierOf(model) ?? 0) >= 2, model);
      assert.match(capable.response.headers.get('x-gateway-route-reason')!, /^tier=[23] code,reasoning[a-z,]*; cheapest fit /);
    });

    test('auto streams: the routed model is in the headers before the first byte', async () => {
      const { data: stream, response } = await t.openai.chat.completions
        .create({ model: 'auto', messages: EASY, stream: true })
        .withResponse();
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'echo: What is the capital of Australia?');
      assert.equal(response.headers.get('x-gateway-model'), 'openai/gpt-5-nano');
      assert.ok(response.headers.get('x-gateway-route-reason'));
    });

    test('sticky sessions: the tier rises with a hard turn and never falls back', async () => {
      const session = { 'X-Gateway-Session-Id': `conv-${kind}-rise` };
      const first = await ask('auto', EASY, session);
      assert.equal(first.response.headers.get('x-gateway-model'), 'openai/gpt-5-nano');
      const second = await ask('auto', HARD, session);
      const raised = second.response.headers.get('x-gateway-model')!;
      assert.ok((tierOf(raised) ?? 0) >= 2);
      assert.match(second.response.headers.get('x-gateway-route-reason')!, /session tier raised from 1$/);
      const third = await ask('auto', EASY, session);
      assert.equal(third.response.headers.get('x-gateway-model'), raised, 'an easy turn stays on the session model');
      assert.match(third.response.headers.get('x-gateway-route-reason')!, /^sticky session tier=[23]$/);
      const other = await ask('auto', EASY, { 'X-Gateway-Session-Id': `conv-${kind}-other` });
      assert.equal(other.response.headers.get('x-gateway-model'), 'openai/gpt-5-nano', 'another session is routed on its own');
    });

    test('a tenant routing explicit models: a cheaper fit replaces the one named, saving against it; X-Gateway-No-Route calls exactly the one named', async () => {
      assert.equal(await setRouting(gw, t, { enabled: true }), 200);
      gw.fake.setBehaviour({ promptTokens: 1000, completionTokens: 200 }, { requests: 1 });
      const routed = await ask('openai/gpt-4o', EASY);
      assert.equal(routed.response.headers.get('x-gateway-model'), 'openai/gpt-5-nano');
      const row = await usageRecord(gw, routed.response.headers.get('x-gateway-request-id')!);
      assert.equal(row.model_requested, 'openai/gpt-4o');
      const expected = costUsd(usage, catalogEntry('openai', 'gpt-4o')!)! - costUsd(usage, catalogEntry('openai', 'gpt-5-nano')!)!;
      assert.ok(Math.abs(row.saved_routing_usd - expected) < 1e-12, 'saved against the model named');

      const exact = await ask('openai/gpt-4o', EASY, { 'X-Gateway-No-Route': 'true' });
      assert.equal(exact.response.headers.get('x-gateway-model'), 'openai/gpt-4o');
      assert.equal(sentModel(gw), 'gpt-4o');
      assert.equal(exact.response.headers.get('x-gateway-route-reason'), null);

      gw.fake.setBehaviour({ fault: '500' });
      const before = gw.fake.calls.count;
      await assert.rejects(ask('openai/gpt-4o', EASY, { 'X-Gateway-No-Route': 'true' }), (err: unknown) => err instanceof OpenAI.APIError && err.status === 502);
      const models = gw.fake.calls.recent.slice(-(gw.fake.calls.count - before)).map((c) => (c.body as { model: string }).model);
      assert.deepEqual(models, ['gpt-4o', 'gpt-4o', 'gpt-4o'], 'retried, never another model');
      gw.fake.reset();
      assert.equal(await setRouting(gw, t, null), 200);
    });

    test('tenant policy: tiers listed per tenant, a minimum tier; invalid settings are refused', async () => {
      assert.equal(await setRouting(gw, t, { tiers: { '1': ['anthropic/claude-3-5-haiku-latest'], '2': ['openai/gpt-4.1'] } }), 200);
      assert.equal((await ask('auto', EASY)).response.headers.get('x-gateway-model'), 'anthropic/claude-3-5-haiku-latest');
      assert.equal(await setRouting(gw, t, { tiers: { '1': ['anthropic/claude-3-5-haiku-latest'], '2': ['openai/gpt-4.1'] }, min_tier: 2 }), 200);
      assert.equal((await ask('auto', EASY)).response.headers.get('x-gateway-model'), 'openai/gpt-4.1');
      assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-4o': ['nowhere/model'] } }), 400);
      assert.equal(await setRouting(gw, t, { min_tier: 4 } as never), 400);
      assert.equal(await setRouting(gw, t, null), 200);
    });

    test('auto with X-Gateway-No-Route, or a request no model can hold: a clear 400', async () => {
      await assert.rejects(ask('auto', EASY, { 'X-Gateway-No-Route': 'true' }), (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === 'route_required');
      await assert.rejects(
        t.openai.chat.completions.create({ model: 'auto', messages: EASY, max_tokens: 2_000_000 }),
        (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === 'no_model_fits' && /context window/.test(err.message),
      );
      await assert.rejects(ask('openai/gpt-4o', EASY, { 'X-Gateway-No-Route': 'yes' }), (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === 'invalid_header');
    });
  });
}

describe('sticky sessions shared by two replicas through Redis', { skip: POSTGRES_URL && REDIS_URL ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL' }, () => {
  test("a session raised on replica A stays raised on replica B; B's easy turn does not lower it", async (t) => {
    const a = await startLiveGateway('postgres', { REDIS_URL: REDIS_URL! });
    t.after(() => a.close());
    const tenant = await a.tenant();
    const b = await startReplica(a, { REDIS_URL: REDIS_URL! });
    const viaB = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: tenant.apiKey, maxRetries: 0 });
    const session = { 'X-Gateway-Session-Id': `shared-${Date.now()}` };
    const onA = await tenant.openai.chat.completions.create({ model: 'auto', messages: HARD }, { headers: session }).withResponse();
    const raised = onA.response.headers.get('x-gateway-model')!;
    assert.ok((tierOf(raised) ?? 0) >= 2);
    const onB = await viaB.chat.completions.create({ model: 'auto', messages: EASY }, { headers: session }).withResponse();
    assert.equal(onB.response.headers.get('x-gateway-model'), raised);
    assert.match(onB.response.headers.get('x-gateway-route-reason')!, /^sticky session/);
    const fresh = await viaB.chat.completions.create({ model: 'auto', messages: EASY }, { headers: { 'X-Gateway-Session-Id': `fresh-${Date.now()}` } }).withResponse();
    assert.equal(fresh.response.headers.get('x-gateway-model'), 'openai/gpt-5-nano');
  });
});
