import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import { costUsd } from '../../../src/gateway/catalog/cost.ts';
import type { FakeProvider } from '../../../tools/fake-provider/server.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { attemptsOf, setRouting, tenantOnTwoFakes, usageRecord } from './routing-fixture.ts';

const HI = [{ role: 'user' as const, content: 'Hi there' }];
const usage = { promptTokens: 1000, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 200, reasoningTokens: 0 };
const lastCall = (fake: FakeProvider) => {
  const call = fake.calls.last()!;
  return { route: call.route, model: (call.body as { model: string }).model };
};

for (const kind of DB_KINDS) {
  describe(`model names and aliases through the OpenAI SDK (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    let anthropic: FakeProvider;
    before(async () => {
      gw = await startLiveGateway(kind, { GATEWAY_RETRY_BASE_DELAY_MS: '1' });
      ({ t, anthropic } = await tenantOnTwoFakes(gw));
    });
    after(async () => {
      await anthropic.close();
      await gw.close();
    });

    const ask = (model: string, headers: Record<string, string> = {}) => t.openai.chat.completions.create({ model, messages: HI }, { headers }).withResponse();
    const setAliases = async (aliases: Record<string, string> | null) =>
      gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { models: aliases === null ? null : { aliases } } } });

    test("a claude-* name the catalog does not know goes to the tenant's Anthropic provider as written, unpriced, and routing never replaces it", async () => {
      const { data, response } = await ask('claude-opus-5-5');
      assert.deepEqual(lastCall(anthropic), { route: 'anthropic.messages', model: 'claude-opus-5-5' });
      assert.equal(data.choices[0]?.message.content, 'echo: Hi there');
      assert.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-opus-5-5');
      assert.equal(response.headers.get('x-gateway-cost'), 'unknown');
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.equal(row.model_requested, 'claude-opus-5-5');
      assert.equal(row.cost_usd, 0);

      assert.equal(await setRouting(gw, t, { enabled: true }), 200);
      const kept = await ask('claude-opus-5-5');
      assert.equal(lastCall(anthropic).model, 'claude-opus-5-5', 'an unpriced model is never routed: nothing to compare its price with');
      assert.equal(kept.response.headers.get('x-gateway-route-reason'), null);
      assert.equal(await setRouting(gw, t, null), 200);
    });

    test('a dated id is sent as written and priced as its catalog entry', async () => {
      anthropic.setBehaviour({ promptTokens: 1000, completionTokens: 200 }, { requests: 1 });
      const { response } = await ask('claude-sonnet-4-5-20250929');
      assert.deepEqual(lastCall(anthropic), { route: 'anthropic.messages', model: 'claude-sonnet-4-5-20250929' });
      const expected = costUsd(usage, catalogEntry('anthropic', 'claude-sonnet-4-5')!)!;
      assert.ok(Math.abs(Number(response.headers.get('x-gateway-cost')) - expected) < 1e-9, response.headers.get('x-gateway-cost')!);
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.ok(Math.abs(row.cost_usd - expected) < 1e-12);
    });

    test('without an Anthropic key, a claude-* name is the usual 400 naming the missing key', async () => {
      const openaiOnly = await gw.tenant({ providers: ['openai'] });
      await assert.rejects(
        openaiOnly.openai.chat.completions.create({ model: 'claude-opus-5-5', messages: HI }),
        (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === 'provider_key_missing' && /anthropic/.test(err.message),
      );
    });

    test('aliases: an exact name beats a pattern, the longest pattern wins; the record keeps the name asked for and the model that answered', async () => {
      const set = await setAliases({ 'claude-haiku-4-5': 'openai/gpt-5-mini', 'claude-*': 'openai/gpt-5', 'claude-opus-*': 'anthropic/claude-sonnet-4-5' });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(set.body.settings.models.aliases['claude-*'], 'openai/gpt-5');

      const haiku = await ask('claude-haiku-4-5');
      assert.deepEqual(lastCall(gw.fake), { route: 'openai.chat', model: 'gpt-5-mini' });
      assert.equal(haiku.response.headers.get('x-gateway-model'), 'openai/gpt-5-mini');
      assert.equal(haiku.response.headers.get('x-gateway-route-reason'), 'alias claude-haiku-4-5 -> openai/gpt-5-mini');
      const haikuId = haiku.response.headers.get('x-gateway-request-id')!;
      const row = await usageRecord(gw, haikuId);
      assert.equal(row.model_requested, 'claude-haiku-4-5');
      assert.equal(row.model_used, 'openai/gpt-5-mini');
      assert.equal(row.route_reason, 'alias claude-haiku-4-5 -> openai/gpt-5-mini');
      assert.equal(row.saved_routing_usd, 0, 'no saving claimed against the name the tenant itself replaced');

      const sonnet = await ask('claude-sonnet-4-5');
      assert.deepEqual(lastCall(gw.fake), { route: 'openai.chat', model: 'gpt-5' });
      assert.equal(sonnet.response.headers.get('x-gateway-route-reason'), 'alias claude-* -> openai/gpt-5');
      const opus = await ask('claude-opus-5-5');
      assert.deepEqual(lastCall(anthropic), { route: 'anthropic.messages', model: 'claude-sonnet-4-5' });
      assert.equal(opus.response.headers.get('x-gateway-route-reason'), 'alias claude-opus-* -> anthropic/claude-sonnet-4-5');
      const other = await ask('openai/gpt-4o-mini');
      assert.equal(other.response.headers.get('x-gateway-route-reason'), null, 'a name no alias matches is called as named');

      // The request log and the usage API find the call by the name asked for, and show both names.
      const log = await gw.api('/api/v1/tenant/requests?model=claude-haiku-4-5', { token: t.session });
      assert.equal(log.status, 200);
      const entry = log.body.requests.find((r: { request_id: string }) => r.request_id === haikuId);
      assert.ok(entry, 'filtered by the alias name');
      assert.equal(entry.model_requested, 'claude-haiku-4-5');
      assert.equal(entry.model_used, 'openai/gpt-5-mini');
      assert.ok(log.body.requests.every((r: { model_requested: string }) => r.model_requested === 'claude-haiku-4-5'));
      const totals = await gw.api('/api/v1/tenant/usage?model=claude-haiku-4-5', { token: t.session });
      assert.equal(totals.body.totals.requests, 1);
      const byRequested = await gw.api('/api/v1/tenant/usage?group_by=model_requested', { token: t.session });
      assert.equal(byRequested.status, 200, JSON.stringify(byRequested.body));
      assert.equal(byRequested.body.groups.find((g: { key: string }) => g.key === 'claude-haiku-4-5')?.requests, 1);
      const byUsed = await gw.api('/api/v1/tenant/usage?group_by=model', { token: t.session });
      assert.ok(byUsed.body.groups.some((g: { key: string }) => g.key === 'openai/gpt-5-mini'));
    });

    test("an alias's target is treated as named: its fallbacks apply, X-Gateway-No-Route calls it alone, and an alias to auto is routed", async () => {
      assert.equal((await setAliases({ 'claude-haiku-4-5': 'openai/gpt-5-mini', 'claude-3-*': 'auto' })).status, 200);
      assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-5-mini': ['anthropic/claude-haiku-4-5'] } }), 200);
      gw.fake.setBehaviour({ fault: '500' });
      try {
        const fell = await ask('claude-haiku-4-5');
        assert.equal(fell.response.headers.get('x-gateway-model'), 'anthropic/claude-haiku-4-5');
        assert.deepEqual(lastCall(anthropic), { route: 'anthropic.messages', model: 'claude-haiku-4-5' });
        assert.equal(fell.response.headers.get('x-gateway-route-reason'), 'alias claude-haiku-4-5 -> openai/gpt-5-mini; fallback from openai/gpt-5-mini (upstream_error)');
        const row = await usageRecord(gw, fell.response.headers.get('x-gateway-request-id')!);
        assert.deepEqual(attemptsOf(row).map((a) => a.model).at(-1), 'anthropic/claude-haiku-4-5');

        await assert.rejects(ask('claude-haiku-4-5', { 'X-Gateway-No-Route': 'true' }), (err: unknown) => err instanceof OpenAI.APIError && err.status === 502);
        assert.equal(lastCall(gw.fake).model, 'gpt-5-mini', 'no fallback under X-Gateway-No-Route, the alias still applies');
      } finally {
        gw.fake.reset();
      }
      assert.equal(await setRouting(gw, t, null), 200);

      const routed = await ask('claude-3-7-sonnet-latest');
      assert.match(routed.response.headers.get('x-gateway-route-reason')!, /^alias claude-3-\* -> auto; tier=1; cheapest fit /);
      await assert.rejects(
        ask('claude-3-7-sonnet-latest', { 'X-Gateway-No-Route': 'true' }),
        (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === 'route_required',
      );
      assert.equal((await setAliases(null)).status, 200);
      const plain = await ask('claude-haiku-4-5');
      assert.deepEqual(lastCall(anthropic), { route: 'anthropic.messages', model: 'claude-haiku-4-5' }, 'reset: the name is the catalog model again');
      assert.equal(plain.response.headers.get('x-gateway-route-reason'), null);
    });

    test('bad aliases are refused with a 400 naming the field, and nothing is stored', async () => {
      const refused = async (aliases: Record<string, string>, field: RegExp) => {
        const res = await setAliases(aliases);
        assert.equal(res.status, 400, JSON.stringify(aliases));
        assert.equal(res.body.code, 'validation_failed');
        assert.ok(res.body.errors.some((e: { field: string }) => field.test(e.field)), JSON.stringify(res.body));
        return res.body;
      };
      await refused({ 'claude-haiku-4-5': 'nowhere/model' }, /^settings\.models\.aliases\.claude-haiku-4-5$/);
      await refused({ 'claude-haiku-4-5': 'gpt-5-mini' }, /^settings\.models\.aliases\.claude-haiku-4-5$/);
      const empty = await refused({ '': 'openai/gpt-5' }, /^settings\.models\.aliases$/);
      assert.match(empty.detail, /has a name "" that/);
      await refused({ auto: 'openai/gpt-5' }, /^settings\.models\.aliases$/);
      await refused({ 'claude-*-x': 'openai/gpt-5' }, /^settings\.models\.aliases$/);
      await refused({ 'claude haiku': 'openai/gpt-5' }, /^settings\.models\.aliases$/);
      await refused(Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`m-${i}`, 'openai/gpt-5'])), /^settings\.models\.aliases$/);
      const hundred = await setAliases(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`m-${i}`, 'openai/gpt-5'])));
      assert.equal(hundred.status, 200, 'a hundred is the bound, not past it');
      assert.equal((await setAliases(null)).status, 200);
      const got = await gw.api('/api/v1/tenant', { token: t.session });
      assert.equal(got.body.settings.models, undefined);
    });
  });
}
