import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import { costUsd } from '../../../src/gateway/catalog/cost.ts';
import { REDIS_URL } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { MODEL, rawPost, streamed, textOf, usageRecord } from './cache-helpers.ts';

const mini = catalogEntry('openai', 'gpt-4o-mini')!;
const ask = (content: string, fields: Record<string, unknown> = {}) => ({ model: MODEL, messages: [{ role: 'user' as const, content }], temperature: 0, ...fields });
const TOOLS = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];
const withoutCost = (chunks: OpenAI.Chat.ChatCompletionChunk[]) =>
  chunks.map((c) => (c.usage ? { ...c, usage: { ...c.usage, cost: undefined } } : c));

const STORES = [
  { name: 'in-memory LRU', env: {} as Record<string, string> },
  ...(REDIS_URL ? [{ name: 'Redis', env: { REDIS_URL } }] : []),
];

for (const store of STORES) {
  describe(`response cache (${store.name})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      // Failures reach the client as they are (retries and fallbacks have their own suite: fallback.test.ts).
      gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0', ...store.env });
    });
    after(() => gw.close());
    const fresh = async () => {
      gw.fake.reset();
      t = await gw.tenant({ providers: ['openai'] });
      return t;
    };

    test('an answer has the same head whether it comes from the provider (a miss) or from the cache (a hit)', async () => {
      await fresh();
      const ask = () =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'the same head, «twice»' }] }),
        });
      const miss = await ask();
      const missBody = Buffer.from(await miss.arrayBuffer());
      const hit = await ask();
      const hitBody = Buffer.from(await hit.arrayBuffer());
      assert.deepEqual([miss.headers.get('x-gateway-cache'), hit.headers.get('x-gateway-cache')], ['miss', 'hit']);
      for (const [res, body] of [[miss, missBody], [hit, hitBody]] as const) {
        assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
        assert.equal(Number(res.headers.get('content-length')), body.length);
      }
      assert.equal(JSON.parse(missBody.toString('utf8')).choices[0].message.content, 'echo: the same head, «twice»');
      assert.deepEqual(JSON.parse(hitBody.toString('utf8')).choices, JSON.parse(missBody.toString('utf8')).choices);
    });

    test('a repeated request is answered from the cache: no upstream call, cost 0, tokens and cost saved, the entry age and model', async () => {
      await fresh();
      gw.fake.setBehaviour({ promptTokens: 1000, completionTokens: 50 });
      const first = await t.openai.chat.completions.create(ask('what is a cache')).withResponse();
      assert.equal(first.response.headers.get('x-gateway-cache'), 'miss');
      const second = await t.openai.chat.completions.create(ask('what is a cache')).withResponse();
      assert.equal(gw.fake.calls.count, 1, 'the provider was called once');
      assert.deepEqual(second.data, first.data, 'the same answer');
      const h = second.response.headers;
      assert.equal(h.get('x-gateway-cache'), 'hit');
      assert.equal(h.get('x-gateway-cost'), '0');
      assert.equal(h.get('x-gateway-tokens-saved'), '1050');
      assert.equal(h.get('x-gateway-cache-age'), '0');
      assert.equal(h.get('x-gateway-provider-cache-saved'), '0', 'nothing was sent to the provider: its cache saved nothing');
      assert.equal(h.get('x-gateway-model'), `openai/${first.data.model}`);
      const cost = costUsd({ promptTokens: 1000, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 50, reasoningTokens: 0 }, mini)!;
      assert.ok(Math.abs(Number(h.get('x-gateway-cost-saved')) - cost) < 1e-12);
      const missRow = await usageRecord(gw, first.response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([missRow.cache_status, missRow.prompt_tokens, missRow.completion_tokens], ['miss', 1000, 50]);
      assert.ok(Math.abs(missRow.cost_usd - cost) < 1e-12);
      const hitRow = await usageRecord(gw, h.get('x-gateway-request-id')!);
      assert.deepEqual(
        [hitRow.cache_status, hitRow.cost_usd, hitRow.prompt_tokens, hitRow.completion_tokens, hitRow.saved_tokens, hitRow.status],
        ['hit', 0, 0, 0, 1050, 200],
      );
      assert.ok(Math.abs(hitRow.saved_cache_usd - cost) < 1e-12, 'the cost saved is the original answer at catalog prices');
      assert.equal(hitRow.model_used, missRow.model_used, 'the record names the model that produced the entry');
    });

    test('key order, whitespace and the model spelled bare or with its provider do not matter; temperature, tools and unknown fields do', async () => {
      await fresh();
      const body = { model: MODEL, temperature: 0, messages: [{ role: 'user', content: 'canonical' }], max_tokens: 20 };
      const first = await rawPost(gw, t.apiKey, JSON.stringify(body));
      assert.equal(first.headers.get('x-gateway-cache'), 'miss');
      const reordered = `{ "max_tokens" : 20,\n\t"messages": [ {"content": "canonical", "role": "user"} ],  "temperature":0, "model":"gpt-4o-mini" }`;
      const again = await rawPost(gw, t.apiKey, reordered);
      assert.equal(again.headers.get('x-gateway-cache'), 'hit');
      assert.equal(again.text, first.text);
      assert.equal(gw.fake.calls.count, 1);
      for (const change of [{ temperature: 0.5 }, { tools: TOOLS }, { frobnicate: 1 }, { max_tokens: 21 }]) {
        const other = await rawPost(gw, t.apiKey, JSON.stringify({ ...body, ...change }));
        assert.equal(other.headers.get('x-gateway-cache'), 'miss', JSON.stringify(change));
      }
      assert.equal(gw.fake.calls.count, 5);
      const noTemperature = { ...body, temperature: undefined };
      assert.equal((await rawPost(gw, t.apiKey, JSON.stringify(noTemperature))).headers.get('x-gateway-cache'), 'miss');
      assert.equal((await rawPost(gw, t.apiKey, JSON.stringify(noTemperature))).headers.get('x-gateway-cache'), 'hit', 'a request without temperature is still cached (documented)');
    });

    test('tenants never share entries', async () => {
      const a = await fresh();
      const b = await gw.tenant({ providers: ['openai'] });
      await a.openai.chat.completions.create(ask('shared question'));
      const { response } = await b.openai.chat.completions.create(ask('shared question')).withResponse();
      assert.equal(response.headers.get('x-gateway-cache'), 'miss');
      assert.equal(gw.fake.calls.count, 2);
      const [first, second] = gw.fake.calls.recent.map((c) => c.headers.authorization);
      assert.notEqual(first, second, "B's own provider key answered B");
    });

    test('a cached stream is replayed chunk for chunk: content, reasoning_content and tool-call deltas, the usage chunk when asked for', async () => {
      await fresh();
      gw.fake.setBehaviour({ reasoning: 'let me think about it', chunks: 4, promptTokens: 100, completionTokens: 20 });
      for (const fields of [{}, { tools: TOOLS, tool_choice: 'required' }]) {
        const body = { ...ask('stream me please', fields), stream: true as const, stream_options: { include_usage: true } };
        const original = await streamed(t.openai, body);
        assert.equal(original.headers.get('x-gateway-cache'), 'miss');
        const replay = await streamed(t.openai, body);
        assert.equal(replay.headers.get('x-gateway-cache'), 'hit');
        assert.ok(original.chunks.length >= 6, `several chunks (${original.chunks.length})`);
        assert.deepEqual(withoutCost(replay.chunks), withoutCost(original.chunks), 'the same chunks, in the same order, field for field');
        assert.ok(original.chunks.some((c) => (c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content));
        const usage = replay.chunks.at(-1)!.usage as { prompt_tokens: number; cost?: number };
        assert.equal(usage.prompt_tokens, 100, 'the replayed usage chunk reports the answer’s tokens');
        assert.equal(usage.cost, 0, 'and costs nothing');
        const plain = await streamed(t.openai, { ...body, stream_options: undefined });
        assert.equal(plain.headers.get('x-gateway-cache'), 'hit');
        assert.ok(plain.chunks.every((c) => c.choices.length > 0), 'no usage chunk when the client did not ask for it');
      }
      const toolChunks = (await streamed(t.openai, { ...ask('stream me please', { tools: TOOLS, tool_choice: 'required' }), stream: true })).chunks;
      assert.ok(toolChunks.filter((c) => c.choices[0]?.delta.tool_calls).length >= 3, 'tool-call argument fragments replayed as fragments');
      assert.equal(gw.fake.calls.count, 2, 'two distinct questions, two upstream calls');
    });

    test('a streamed entry answers a non-streamed request, and the reverse', async () => {
      await fresh();
      gw.fake.setBehaviour({ reasoning: 'pondering', promptTokens: 10, completionTokens: 5 });
      const body = ask('either shape', { tools: TOOLS, tool_choice: 'required' });
      const stream = await streamed(t.openai, { ...body, stream: true });
      const { data, response } = await t.openai.chat.completions.create(body).withResponse();
      assert.equal(response.headers.get('x-gateway-cache'), 'hit');
      const message = data.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };
      assert.equal(message.reasoning_content, 'pondering');
      const args = stream.chunks.map((c) => c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '').join('');
      assert.equal(message.tool_calls?.[0]?.type === 'function' && message.tool_calls[0].function.arguments, args);
      assert.equal(data.choices[0]!.finish_reason, 'tool_calls');
      assert.equal(data.usage?.prompt_tokens, 10);

      const completion = await t.openai.chat.completions.create(ask('the other way round'));
      const replay = await streamed(t.openai, { ...ask('the other way round'), stream: true, stream_options: { include_usage: true } });
      assert.equal(replay.headers.get('x-gateway-cache'), 'hit');
      assert.equal(textOf(replay.chunks), completion.choices[0]!.message.content);
      assert.equal(replay.chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
      assert.equal(replay.chunks.at(-1)?.usage?.completion_tokens, 5);
      assert.equal(gw.fake.calls.count, 2);
    });

    test('a truncated or errored stream is never stored; nor is an error', async () => {
      await fresh();
      for (const fault of ['drop', 'stream-error'] as const) {
        gw.fake.setBehaviour({ fault, faultAfterChunks: 2, chunks: 5 }, { requests: 1 });
        const body = { ...ask(`faulty ${fault}`), stream: true as const };
        await assert.rejects(streamed(t.openai, body), `the ${fault} stream fails`);
        const again = await streamed(t.openai, body);
        assert.equal(again.headers.get('x-gateway-cache'), 'miss', `${fault}: not answered from the cache`);
        assert.equal(textOf(again.chunks), `echo: faulty ${fault}`);
      }
      gw.fake.setBehaviour({ fault: '500' }, { requests: 1 });
      await assert.rejects(t.openai.chat.completions.create(ask('failing')), (err: unknown) => err instanceof OpenAI.APIError && err.status === 502);
      const { response } = await t.openai.chat.completions.create(ask('failing')).withResponse();
      assert.equal(response.headers.get('x-gateway-cache'), 'miss');
      assert.equal(gw.fake.calls.count, 6);
    });

    test('entries expire with the tenant TTL; settings.cache.enabled false and X-Gateway-No-Cache bypass the cache', async () => {
      await fresh();
      const patched = await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { cache: { ttl_seconds: 1 } } } });
      assert.equal(patched.status, 200);
      await t.openai.chat.completions.create(ask('short lived'));
      const hit = await t.openai.chat.completions.create(ask('short lived')).withResponse();
      assert.equal(hit.response.headers.get('x-gateway-cache'), 'hit');
      await new Promise((r) => setTimeout(r, 1100));
      const expired = await t.openai.chat.completions.create(ask('short lived')).withResponse();
      assert.equal(expired.response.headers.get('x-gateway-cache'), 'miss', 'expired after ttl_seconds');

      const noCache = { headers: { 'X-Gateway-No-Cache': 'true' } };
      const bypass = await t.openai.chat.completions.create(ask('short lived'), noCache).withResponse();
      assert.equal(bypass.response.headers.get('x-gateway-cache'), 'bypass', 'not read');
      await t.openai.chat.completions.create(ask('never stored'), noCache);
      const after = await t.openai.chat.completions.create(ask('never stored')).withResponse();
      assert.equal(after.response.headers.get('x-gateway-cache'), 'miss', 'not written');
      assert.equal(gw.fake.calls.count, 5);
      await assert.rejects(
        t.openai.chat.completions.create(ask('x'), { headers: { 'X-Gateway-No-Cache': 'yes' } }),
        (err: unknown) => err instanceof OpenAI.BadRequestError && (err as { code?: string }).code === 'invalid_header',
      );

      await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { cache: { enabled: false } } } });
      const off = await t.openai.chat.completions.create(ask('never stored')).withResponse();
      assert.equal(off.response.headers.get('x-gateway-cache'), 'bypass');
      assert.equal(gw.fake.calls.count, 6);
    });
  });
}

describe('response cache memory bound', () => {
  test('the in-memory LRU keeps at most GATEWAY_CACHE_MAX_BYTES: the least recently used answer is evicted', async (t) => {
    // One entry of this test takes about 800 bytes of the ring (its key, its metadata and the chat.completion): room for two, not three.
    // One tenant, given the whole ring (its share is otherwise a quarter: shared-tables.test.ts).
    const gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_CACHE_MAX_BYTES: '2000', GATEWAY_CACHE_TENANT_SHARE_PERCENT: '100' });
    t.after(() => gw.close());
    const tenant = await gw.tenant({ providers: ['openai'] });
    const status = async (content: string) =>
      (await tenant.openai.chat.completions.create(ask(content)).withResponse()).response.headers.get('x-gateway-cache');
    assert.equal(await status('one'), 'miss');
    assert.equal(await status('two'), 'miss');
    assert.equal(await status('one'), 'hit', 'one is now the most recently used');
    assert.equal(await status('three'), 'miss');
    assert.equal(await status('two'), 'miss', 'two was evicted to make room for three');
    assert.equal(await status('three'), 'hit');
  });

  test("a tenant's max_entry_bytes: a larger answer is served but not stored", async (t) => {
    const gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true' });
    t.after(() => gw.close());
    const tenant = await gw.tenant({ providers: ['openai'] });
    const patched = await gw.api('/api/v1/tenant', { method: 'PATCH', token: tenant.session, body: { settings: { cache: { max_entry_bytes: 1024 } } } });
    assert.equal(patched.status, 200);
    gw.fake.setBehaviour({ text: 'long '.repeat(400) });
    const status = async () => (await tenant.openai.chat.completions.create(ask('big answer')).withResponse()).response.headers.get('x-gateway-cache');
    assert.equal(await status(), 'miss');
    assert.equal(await status(), 'miss', 'the 2 KB answer was not stored under a 1 KB bound');
    await gw.api('/api/v1/tenant', { method: 'PATCH', token: tenant.session, body: { settings: { cache: null } } });
    assert.equal(await status(), 'miss');
    assert.equal(await status(), 'hit', 'stored under the gateway default (1 MiB)');
  });
});
