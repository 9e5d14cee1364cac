import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { FakeProvider } from '../../../tools/fake-provider/server.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { attemptsOf, metric, setRouting, tenantOnTwoFakes, usageRecord } from './routing-fixture.ts';

const MESSAGES = [{ role: 'user' as const, content: 'hello there' }];
const requestIdOf = (headers: Headers) => headers.get('x-gateway-request-id')!;

/**
 * Retries and fallbacks, against two fakes: the tenant's OpenAI key on the
 * gateway's fake (`gw.fake`), its Anthropic key on a second one. The chain
 * for openai/gpt-4o-mini is openai/gpt-5-nano, then anthropic/claude-haiku-4-5.
 */
for (const kind of DB_KINDS) {
  describe(`retries and fallbacks (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    let anthropic: FakeProvider;
    before(async () => {
      gw = await startLiveGateway(kind, {
        GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '300',
        GATEWAY_UPSTREAM_IDLE_TIMEOUT_MS: '300',
        GATEWAY_RETRIES: '1',
        GATEWAY_RETRY_BASE_DELAY_MS: '5',
        GATEWAY_RETRY_MAX_DELAY_MS: '2000',
        GATEWAY_BREAKER_FAILURES: '1000',
      });
      ({ t, anthropic } = await tenantOnTwoFakes(gw));
      assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-4o-mini': ['openai/gpt-5-nano', 'anthropic/claude-haiku-4-5'] } }), 200);
    });
    after(async () => {
      await gw.close();
      await anthropic.close();
    });
    beforeEach(() => {
      gw.fake.reset();
      anthropic.reset();
    });

    const ask = (model = 'openai/gpt-4o-mini') => t.openai.chat.completions.create({ model, messages: MESSAGES }).withResponse();
    const openaiModels = () => gw.fake.calls.recent.map((c) => (c.body as { model: string }).model);

    test('a 429 with Retry-After: waited for as asked, then the same model answers; both tries in the usage record', async () => {
      gw.fake.setBehaviour({ fault: '429', retryAfterS: 1 }, { requests: 1 });
      const started = performance.now();
      const { data, response } = await ask();
      assert.ok(performance.now() - started >= 1000, 'Retry-After: 1 was honoured');
      assert.equal(data.choices[0]?.message.content, 'echo: hello there');
      assert.equal(response.headers.get('x-gateway-model'), 'openai/gpt-4o-mini');
      assert.equal(response.headers.get('x-gateway-attempts'), '2');
      const row = await usageRecord(gw, requestIdOf(response.headers));
      assert.deepEqual(
        attemptsOf(row).map((a) => [a.model, a.status, a.errorCode]),
        [
          ['openai/gpt-4o-mini', 429, 'rate_limit_exceeded'],
          ['openai/gpt-4o-mini', 200, undefined],
        ],
      );
      assert.equal(row.status, 200);
    });

    test('a Retry-After beyond the cap is not waited for: the next model in the chain answers at once', async () => {
      gw.fake.setBehaviour({ fault: '429', retryAfterS: 30 }, { requests: 1 });
      const started = performance.now();
      const { response } = await ask();
      assert.ok(performance.now() - started < 1000);
      assert.equal(response.headers.get('x-gateway-model'), 'openai/gpt-5-nano');
      assert.equal(response.headers.get('x-gateway-route-reason'), 'fallback from openai/gpt-4o-mini (rate_limit_exceeded)');
    });

    test('an answer a fallback produced, replayed from the cache to a call that cannot route there: X-Gateway-Model and the metrics name its producer', async () => {
      const routing = { fallbacks: { 'openai/gpt-4o-mini': ['openai/gpt-5-nano', 'anthropic/claude-haiku-4-5'] } };
      const settings = (more: object) => gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { routing, ...more } } });
      assert.equal((await settings({ cache: { enabled: true } })).status, 200);
      try {
        gw.fake.setBehaviour({ fault: '500' });
        const first = await ask();
        assert.equal(first.response.headers.get('x-gateway-model'), 'anthropic/claude-haiku-4-5');
        const labels = { status: '200', model: 'anthropic/claude-haiku-4-5', provider: 'anthropic', cache: 'hit' };
        const counted = await metric(gw, 'gateway_calls_total', labels);
        // Exactly the model named: Anthropic is not among this call's targets, yet its answer is the entry.
        const again = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: MESSAGES }, { headers: { 'x-gateway-no-route': 'true' } }).withResponse();
        assert.equal(again.response.headers.get('x-gateway-cache'), 'hit');
        assert.equal(again.response.headers.get('x-gateway-model'), 'anthropic/claude-haiku-4-5');
        assert.equal(await metric(gw, 'gateway_calls_total', labels), counted + 1, 'counted under the model that produced the answer');
      } finally {
        assert.equal((await settings({ cache: null })).status, 200, "the suite's other tests call uncached");
      }
    });

    test('500s: retried, then the fallbacks in order, the other provider answering; X-Gateway-Model names it', async () => {
      gw.fake.setBehaviour({ fault: '500' });
      const { data, response } = await ask();
      assert.equal(data.choices[0]?.message.content, 'echo: hello there');
      assert.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-haiku-4-5');
      assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
      assert.deepEqual(openaiModels(), ['gpt-4o-mini', 'gpt-4o-mini', 'gpt-5-nano', 'gpt-5-nano']);
      assert.equal((anthropic.calls.last()!.body as { model: string }).model, 'claude-haiku-4-5');
      const row = await usageRecord(gw, requestIdOf(response.headers));
      assert.equal(row.model_requested, 'openai/gpt-4o-mini');
      assert.equal(row.model_used, 'anthropic/claude-haiku-4-5');
      assert.equal(row.route_reason, 'fallback from openai/gpt-4o-mini (upstream_error)');
      assert.deepEqual(attemptsOf(row).map((a) => a.status), [502, 502, 502, 502, 200]);
      assert.ok(attemptsOf(row).every((a) => typeof a.ms === 'number'));
    });

    test('a provider that hangs: the first-byte timeout, one retry, then the answer', async () => {
      gw.fake.setBehaviour({ fault: 'hang' }, { requests: 1 });
      const { response } = await ask();
      assert.equal(response.headers.get('x-gateway-model'), 'openai/gpt-4o-mini');
      const row = await usageRecord(gw, requestIdOf(response.headers));
      assert.deepEqual(attemptsOf(row).map((a) => a.errorCode), ['upstream_timeout', undefined]);
    });

    test('the provider refuses the key (401): no retry, no other model of that provider, another provider answers', async () => {
      gw.fake.setBehaviour({ fault: '401' });
      const { response } = await ask();
      assert.deepEqual(openaiModels(), ['gpt-4o-mini'], 'tried once; gpt-5-nano (same provider, same key) skipped');
      assert.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-haiku-4-5');
    });

    test('every target failing: the last error reaches the client, every try recorded', async () => {
      gw.fake.setBehaviour({ fault: '500' });
      anthropic.setBehaviour({ fault: '529' });
      await assert.rejects(ask(), (err: unknown) => err instanceof OpenAI.APIError && err.status === 503);
      assert.equal(gw.fake.calls.count + anthropic.calls.count, 6);
    });

    test('a request the gateway refuses for the chosen model (400) is not retried nor fallen back on', async () => {
      assert.equal(await setRouting(gw, t, { fallbacks: { 'anthropic/claude-haiku-4-5': ['openai/gpt-4o-mini'] } }), 200);
      await assert.rejects(
        t.openai.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: MESSAGES, n: 2 }),
        (err: unknown) => err instanceof OpenAI.BadRequestError,
      );
      assert.equal(gw.fake.calls.count + anthropic.calls.count, 0);
      assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-4o-mini': ['openai/gpt-5-nano', 'anthropic/claude-haiku-4-5'] } }), 200);
    });

    test('context windows: a fallback too small for the request is skipped (LiteLLM #31557)', async () => {
      assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-4.1': ['openai/gpt-4o', 'anthropic/claude-sonnet-4-5'] } }), 200);
      gw.fake.setBehaviour({ fault: '500' });
      // 150k tokens of output: gpt-4.1 (1M window) and claude-sonnet-4-5 (200k) hold it, gpt-4o (128k) does not.
      const { response } = await t.openai.chat.completions.create({ model: 'openai/gpt-4.1', messages: MESSAGES, max_tokens: 150_000 }).withResponse();
      assert.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-sonnet-4-5');
      assert.deepEqual(openaiModels(), ['gpt-4.1', 'gpt-4.1'], 'gpt-4o never called');
      assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-4o-mini': ['openai/gpt-5-nano', 'anthropic/claude-haiku-4-5'] } }), 200);
    });

    test('the default chain, when the tenant configures none: another provider first', async () => {
      assert.equal(await setRouting(gw, t, null), 200);
      gw.fake.setBehaviour({ fault: '500' });
      const { response } = await ask('openai/gpt-4o');
      assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
      assert.match(response.headers.get('x-gateway-route-reason')!, /^fallback from openai\/gpt-4o \(upstream_error\)$/);
      assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-4o-mini': ['openai/gpt-5-nano', 'anthropic/claude-haiku-4-5'] } }), 200);
    });

    test('a stream failing before its first byte is retried: the client sees one clean stream', async () => {
      gw.fake.setBehaviour({ fault: 'stream-error', faultAfterChunks: 0 }, { requests: 1 });
      const { data: stream, response } = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: MESSAGES, stream: true }).withResponse();
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'echo: hello there');
      assert.equal(gw.fake.calls.count, 2);
      const row = await usageRecord(gw, requestIdOf(response.headers));
      assert.deepEqual(attemptsOf(row).map((a) => a.status), [502, 200]);
    });

    test('a stream failing after its first byte reached the client is not retried: the client gets the error', async () => {
      gw.fake.setBehaviour({ fault: 'drop', faultAfterChunks: 2, chunkDelayMs: 5 }, { requests: 1 });
      const stream = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a b c d e f' }], stream: true });
      let text = '';
      await assert.rejects(async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      }, OpenAI.APIError);
      assert.ok(text.length > 0);
      assert.equal(gw.fake.calls.count + anthropic.calls.count, 1, 'no second upstream call');
    });
  });
}

describe('the circuit breaker', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  let anthropic: FakeProvider;
  before(async () => {
    gw = await startLiveGateway('sqlite', { GATEWAY_RETRIES: '0', GATEWAY_BREAKER_FAILURES: '2', GATEWAY_BREAKER_COOLDOWN_MS: '400' });
    ({ t, anthropic } = await tenantOnTwoFakes(gw));
    assert.equal(await setRouting(gw, t, { fallbacks: { 'openai/gpt-4o-mini': ['anthropic/claude-haiku-4-5'] } }), 200);
  });
  after(async () => {
    await gw.close();
    await anthropic.close();
  });

  const ask = () => t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: MESSAGES }).withResponse();
  const providerOf = async () => (await ask()).response.headers.get('x-gateway-provider');
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  test('opens after repeated failures and skips the provider, half-opens after the cooldown, closes on a good probe; metrics say so', async () => {
    gw.fake.setBehaviour({ fault: '500' });
    assert.equal(await providerOf(), 'anthropic');
    assert.equal(await providerOf(), 'anthropic');
    assert.equal(gw.fake.calls.count, 2);
    assert.equal(await metric(gw, 'gateway_circuit_events_total', { provider: 'openai', event: 'opened' }), 1);
    assert.equal(await metric(gw, 'gateway_circuits_open', { provider: 'openai' }), 1);

    const skipped = await ask();
    assert.equal(skipped.response.headers.get('x-gateway-provider'), 'anthropic');
    assert.equal(gw.fake.calls.count, 2, 'OpenAI not called while its circuit is open');
    assert.equal(skipped.response.headers.get('x-gateway-route-reason'), 'fallback from openai/gpt-4o-mini (circuit_open)');
    const row = await usageRecord(gw, requestIdOf(skipped.response.headers));
    assert.deepEqual(attemptsOf(row).map((a) => [a.status, a.errorCode]), [[503, 'circuit_open'], [200, undefined]]);
    assert.ok((await metric(gw, 'gateway_circuit_events_total', { provider: 'openai', event: 'skipped' })) >= 1);

    await sleep(450);
    assert.equal(await providerOf(), 'anthropic', 'the probe failed: open again');
    assert.equal(gw.fake.calls.count, 3);
    assert.equal(await providerOf(), 'anthropic');
    assert.equal(gw.fake.calls.count, 3, 'skipped again for another cooldown');

    gw.fake.reset();
    await sleep(450);
    assert.equal(await providerOf(), 'openai', 'the probe succeeded: closed');
    assert.equal(await providerOf(), 'openai');
    assert.equal(await metric(gw, 'gateway_circuit_events_total', { provider: 'openai', event: 'half_open' }), 2);
    assert.equal(await metric(gw, 'gateway_circuit_events_total', { provider: 'openai', event: 'closed' }), 1);
    assert.equal(await metric(gw, 'gateway_circuits_open', { provider: 'openai' }), 0);
  });

  test('when every target is open: 503 upstream_circuit_open with Retry-After, no upstream call', async () => {
    gw.fake.setBehaviour({ fault: '500' });
    anthropic.setBehaviour({ fault: '500' });
    for (let i = 0; i < 2; i++) await assert.rejects(ask());
    const before = gw.fake.calls.count + anthropic.calls.count;
    await assert.rejects(ask(), (err: unknown) => err instanceof OpenAI.APIError && err.status === 503 && err.code === 'upstream_circuit_open' && err.headers?.get('retry-after') === '1');
    assert.equal(gw.fake.calls.count + anthropic.calls.count, before);
  });
});
