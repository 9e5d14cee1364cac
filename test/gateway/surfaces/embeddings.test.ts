import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { costUsd, formatUsd } from '../../../src/gateway/catalog/cost.ts';
import { EMBEDDING_MODELS } from '../../../src/gateway/catalog/models.ts';
import { REDIS_URL } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/**
 * POST /v1/embeddings through the real app with the official `openai` SDK
 * (its embeddings.create asks for base64 and decodes it, unless told a
 * format), against the fake provider's embeddings (deterministic float32
 * vectors: the same input always gives the same vector), in each answer
 * store the gateway has: the input cache, the usage records, budgets, the
 * errors, the models list.
 */

const MODEL = 'text-embedding-3-small';
const small = EMBEDDING_MODELS.find((m) => m.id === MODEL)!;
/** What `tokens` prompt tokens of text-embedding-3-small cost at the catalog's price. */
const priced = (tokens: number) => costUsd({ promptTokens: tokens, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 }, small)!;
/** The fake counts a text as a quarter of its length, rounded up: texts of 4n characters are n tokens each. */
const text = (word: string, tokens: number) => `${word} `.repeat(tokens * 4).slice(0, tokens * 4);

const STORES = [{ name: 'in-memory store', env: {} as Record<string, string> }, ...(REDIS_URL ? [{ name: 'Redis store', env: { REDIS_URL } }] : [])];

/** Marks the test's own calls to the fake, so that they are not counted as the gateway's. */
const DIRECT = 'x-test-direct';

/** The embeddings calls the gateway made to the fake, oldest first. */
const upstreamCalls = (gw: LiveGateway) => gw.fake.calls.recent.filter((c) => c.route === 'openai.embeddings' && c.headers[DIRECT] === undefined);

/** Their bodies, parsed. */
const upstreamBodies = (gw: LiveGateway) =>
  upstreamCalls(gw).map((c) => c.body as { model: string; input: unknown; encoding_format?: string; dimensions?: number });

/** The provider's own answer to `body`, asked directly with the tenant's provider key (what a client without the gateway gets). */
async function direct(gw: LiveGateway, t: LiveTenant, body: Record<string, unknown>) {
  const res = await fetch(`${gw.fake.url}/v1/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.providerKeys['openai']}`, 'content-type': 'application/json', [DIRECT]: '1' },
    body: JSON.stringify({ model: MODEL, ...body }),
  });
  assert.equal(res.status, 200);
  return (await res.json()) as { data: { index: number; embedding: number[] | string }[]; usage: { prompt_tokens: number } };
}

/** A raw POST to the gateway's /v1/embeddings, the body as given. */
async function post(gw: LiveGateway, t: LiveTenant, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/v1/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const raw = await res.text();
  return { status: res.status, headers: res.headers, raw, body: JSON.parse(raw) };
}

for (const store of STORES) {
  describe(`POST /v1/embeddings, the input cache in the ${store.name}`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0', ...store.env });
    });
    after(() => gw.close());
    const fresh = async () => {
      gw.fake.reset();
      t = await gw.tenant({ providers: ['openai', 'anthropic', 'mistral'] });
    };

    test('a string: one vector, the provider\'s own (the SDK decodes the base64 it asked for); miss, priced, recorded', async () => {
      await fresh();
      const input = text('hello', 5);
      const { data, response } = await t.openai.embeddings.create({ model: MODEL, input }).withResponse();
      const own = await direct(gw, t, { input });
      assert.equal(data.object, 'list');
      assert.equal(data.data.length, 1);
      assert.equal(data.data[0]!.index, 0);
      assert.deepEqual(data.data[0]!.embedding, own.data[0]!.embedding, 'the same float32 values as the provider answered');
      assert.equal(data.model, MODEL);
      assert.deepEqual(data.usage, { prompt_tokens: 5, total_tokens: 5 });
      const [sent] = upstreamBodies(gw);
      assert.deepEqual(sent, { model: MODEL, input, encoding_format: 'base64' }, "the client's input as it sent it; base64 asked upstream");
      const h = response.headers;
      assert.equal(h.get('x-gateway-cache'), 'miss');
      assert.equal(h.get('x-gateway-inputs-cached'), '0/1');
      assert.equal(h.get('x-gateway-model'), `openai/${MODEL}`);
      assert.equal(h.get('x-gateway-cost'), formatUsd(priced(5)));
      assert.equal(h.get('x-gateway-cost-saved'), '0');
      assert.ok(Number(h.get('x-gateway-overhead-ms')) >= 0);
      const row = await usageRecord(gw, h.get('x-gateway-request-id')!);
      assert.deepEqual(
        [row.surface, row.status, row.cache_status, row.model_requested, row.model_used, row.prompt_tokens, row.completion_tokens],
        ['embeddings', 200, 'miss', MODEL, `openai/${MODEL}`, 5, 0],
      );
      assert.equal(row.cost_usd, priced(5));
      assert.equal(row.saved_cache_usd, 0);
    });

    test('float and base64 as the client asks, from the same stored vector; dimensions go upstream and into the key', async () => {
      await fresh();
      const input = ['one fish', 'two fish'];
      const floats = await t.openai.embeddings.create({ model: MODEL, input, encoding_format: 'float', dimensions: 16 });
      const ownFloats = await direct(gw, t, { input, encoding_format: 'float', dimensions: 16 });
      assert.deepEqual(
        floats.data.map((d) => d.embedding),
        ownFloats.data.map((d) => d.embedding),
      );
      assert.equal((floats.data[0]!.embedding as number[]).length, 16);
      assert.equal(upstreamBodies(gw)[0]!.dimensions, 16);

      // The same inputs in base64, from the cache: the provider's own base64, to the byte.
      const b64 = await t.openai.embeddings.create({ model: MODEL, input, encoding_format: 'base64', dimensions: 16 }).withResponse();
      const ownB64 = await direct(gw, t, { input, encoding_format: 'base64', dimensions: 16 });
      assert.equal(b64.response.headers.get('x-gateway-cache'), 'hit');
      assert.deepEqual(
        b64.data.data.map((d) => d.embedding),
        ownB64.data.map((d) => d.embedding),
      );

      // No encoding_format: OpenAI's default, float; the answer's exact shape.
      const raw = await post(gw, t, { model: MODEL, input: 'one fish', dimensions: 16 });
      assert.equal(raw.status, 200);
      assert.equal(raw.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.deepEqual(Object.keys(raw.body), ['object', 'data', 'model', 'usage']);
      assert.deepEqual(raw.body.data, [{ object: 'embedding', index: 0, embedding: ownFloats.data[0]!.embedding }]);

      // Another dimension is another vector: not a hit.
      const eight = await t.openai.embeddings.create({ model: MODEL, input: 'one fish', dimensions: 8 }).withResponse();
      assert.equal(eight.response.headers.get('x-gateway-cache'), 'miss');
      assert.equal((eight.data.data[0]!.embedding as number[]).length, 8);
      assert.equal(upstreamBodies(gw).length, 2, 'the 16-dimension calls made one upstream call, the 8-dimension one another');
    });

    test('a partial hit: of 4 inputs, the 2 embedded before come from the cache, one upstream call carries the other 2, the answer in order', async () => {
      await fresh();
      const [a, b, c, d] = [text('alpha', 10), text('beta', 5), text('gamma', 3), text('delta', 7)];
      const first = await t.openai.embeddings.create({ model: MODEL, input: [a, b] }).withResponse();
      assert.equal(first.data.usage.prompt_tokens, 15);
      const firstRow = await usageRecord(gw, first.response.headers.get('x-gateway-request-id')!);

      const { data, response } = await t.openai.embeddings.create({ model: MODEL, input: [c, a, d, b] }).withResponse();
      const sent = upstreamBodies(gw);
      assert.equal(sent.length, 2, 'exactly one more upstream call');
      assert.deepEqual(sent[1]!.input, [c, d], 'carrying only the missing inputs, in the client\'s order');
      const own = await direct(gw, t, { input: [c, a, d, b], encoding_format: 'float' });
      assert.deepEqual(
        data.data.map((e) => e.index),
        [0, 1, 2, 3],
      );
      assert.deepEqual(
        data.data.map((e) => e.embedding),
        own.data.map((e) => e.embedding),
        "each vector in its place, equal to the provider's answer to the whole request",
      );
      assert.deepEqual(data.usage, { prompt_tokens: 10, total_tokens: 10 }, 'the tokens billed: the inputs sent');
      const h = response.headers;
      assert.equal(h.get('x-gateway-cache'), 'partial');
      assert.equal(h.get('x-gateway-inputs-cached'), '2/4');
      assert.equal(h.get('x-gateway-tokens-saved'), '15');
      assert.equal(h.get('x-gateway-cost'), formatUsd(priced(10)));
      assert.equal(h.get('x-gateway-cost-saved'), formatUsd(firstRow.cost_usd), 'the cached inputs saved what they cost the first time');
      const row = await usageRecord(gw, h.get('x-gateway-request-id')!);
      assert.deepEqual([row.surface, row.cache_status, row.prompt_tokens, row.saved_tokens], ['embeddings', 'partial', 10, 15]);
      assert.ok(Math.abs(row.cost_usd - priced(10)) < 1e-15);
      assert.ok(Math.abs(row.saved_cache_usd - priced(15)) < 1e-15);
      assert.equal(row.cost_saved_usd, row.saved_cache_usd);
      const requests = await gw.api('/api/v1/tenant/requests?cache_status=partial', { token: t.session });
      assert.deepEqual(
        requests.body.requests.map((r: { request_id: string }) => r.request_id),
        [row.request_id],
        'the request log filters on partial',
      );
    });

    test('a 100 % hit: no upstream call, nothing billed, what the inputs cost the first time saved, in either encoding', async () => {
      await fresh();
      const input = [text('red', 4), text('green', 6), text('blue', 2)];
      const first = await t.openai.embeddings.create({ model: MODEL, input, encoding_format: 'float' });
      gw.fake.calls.clear();
      const { data, response } = await t.openai.embeddings.create({ model: MODEL, input }).withResponse();
      assert.equal(gw.fake.calls.count, 0, 'the provider was not called');
      assert.deepEqual(
        data.data.map((e) => e.embedding),
        first.data.map((e) => e.embedding),
      );
      assert.deepEqual(data.usage, { prompt_tokens: 0, total_tokens: 0 });
      assert.equal(data.model, first.model, 'the model that made the vectors');
      const h = response.headers;
      assert.deepEqual(
        ['x-gateway-cache', 'x-gateway-inputs-cached', 'x-gateway-cost', 'x-gateway-tokens-saved', 'x-gateway-cache-age', 'x-gateway-model'].map((n) => h.get(n)),
        ['hit', '3/3', '0', '12', '0', `openai/${MODEL}`],
      );
      assert.equal(h.get('x-gateway-cost-saved'), formatUsd(priced(12)));
      const row = await usageRecord(gw, h.get('x-gateway-request-id')!);
      assert.deepEqual([row.cache_status, row.cost_usd, row.prompt_tokens, row.saved_tokens, row.model_used], ['hit', 0, 0, 12, `openai/${MODEL}`]);
      assert.ok(Math.abs(row.saved_cache_usd - priced(12)) < 1e-15);
    });

    test('the same text twice in one request is sent once, and answered in both places', async () => {
      await fresh();
      const [x, y] = [text('same', 2), text('other', 3)];
      const { data, response } = await t.openai.embeddings.create({ model: MODEL, input: [x, y, x] }).withResponse();
      assert.deepEqual(upstreamBodies(gw)[0]!.input, [x, y]);
      assert.equal(data.data.length, 3);
      assert.deepEqual(data.data[2]!.embedding, data.data[0]!.embedding);
      assert.notDeepEqual(data.data[1]!.embedding, data.data[0]!.embedding);
      assert.deepEqual([response.headers.get('x-gateway-cache'), response.headers.get('x-gateway-inputs-cached')], ['partial', '1/3']);
      assert.equal(response.headers.get('x-gateway-tokens-saved'), '2');
    });

    test('X-Gateway-No-Cache and token-array inputs bypass the cache: every input goes upstream as sent, each time', async () => {
      await fresh();
      const input = text('uncached', 3);
      for (let i = 0; i < 2; i++) {
        const r = await post(gw, t, { model: MODEL, input }, { 'x-gateway-no-cache': 'true' });
        assert.equal(r.headers.get('x-gateway-cache'), 'bypass');
      }
      const tokens = [
        [1, 2, 3],
        [4, 5],
      ];
      for (let i = 0; i < 2; i++) {
        const r = await t.openai.embeddings.create({ model: MODEL, input: tokens }).withResponse();
        assert.equal(r.response.headers.get('x-gateway-cache'), 'bypass');
        assert.equal(r.data.data.length, 2);
        assert.equal(r.data.usage.prompt_tokens, 5, 'the fake counts a token array by its length');
      }
      const sent = upstreamBodies(gw);
      assert.equal(sent.length, 4);
      assert.deepEqual(sent[3]!.input, tokens);
      // One token array (a list of ids) is one input.
      const one = await post(gw, t, { model: MODEL, input: [7, 8, 9], encoding_format: 'base64' });
      assert.equal(one.status, 200);
      assert.equal(one.body.data.length, 1);
      assert.equal(typeof one.body.data[0].embedding, 'string');
    });

    test("tenants never share vectors: tenant B's identical input is a miss, sent upstream with B's key", async () => {
      await fresh();
      const a = t;
      const b = await gw.tenant({ providers: ['openai'] });
      const input = text('secret', 4);
      await a.openai.embeddings.create({ model: MODEL, input });
      const hitA = await a.openai.embeddings.create({ model: MODEL, input }).withResponse();
      assert.equal(hitA.response.headers.get('x-gateway-cache'), 'hit');
      const fromB = await b.openai.embeddings.create({ model: MODEL, input }).withResponse();
      assert.equal(fromB.response.headers.get('x-gateway-cache'), 'miss');
      const calls = upstreamCalls(gw);
      assert.equal(calls.length, 2);
      assert.equal(calls[1]!.headers['authorization'], `Bearer ${b.providerKeys['openai']}`);
    });

    test('a failed upstream call is mapped as chat\'s are, recorded, and stores nothing', async () => {
      await fresh();
      const input = text('fails', 2);
      gw.fake.setBehaviour({ fault: '429' }, { requests: 1 });
      await assert.rejects(t.openai.embeddings.create({ model: MODEL, input }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        return true;
      });
      gw.fake.setBehaviour({ fault: 'garbage' }, { requests: 1 });
      const garbage = await post(gw, t, { model: MODEL, input });
      assert.deepEqual([garbage.status, garbage.body.error.code], [502, 'upstream_invalid_response']);
      const row = await usageRecord(gw, garbage.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.surface, row.status, row.error_code, row.cache_status], ['embeddings', 502, 'upstream_invalid_response', 'miss']);
      const ok = await t.openai.embeddings.create({ model: MODEL, input }).withResponse();
      assert.equal(ok.response.headers.get('x-gateway-cache'), 'miss', 'no failed answer was stored');
      assert.equal(upstreamBodies(gw).length, 3);
    });

    test('mistral-embed through the mistral provider, priced from the catalog and cached under its own model', async () => {
      await fresh();
      const input = text('bonjour', 8);
      const first = await t.openai.embeddings.create({ model: 'mistral-embed', input }).withResponse();
      assert.equal(first.response.headers.get('x-gateway-model'), 'mistral/mistral-embed');
      const mistral = EMBEDDING_MODELS.find((m) => m.id === 'mistral-embed')!;
      assert.equal(first.response.headers.get('x-gateway-cost'), formatUsd(costUsd({ promptTokens: 8, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 }, mistral)));
      assert.equal(gw.fake.calls.last()!.headers['authorization'], `Bearer ${t.providerKeys['mistral']}`);
      const again = await t.openai.embeddings.create({ model: 'mistral/mistral-embed', input }).withResponse();
      assert.equal(again.response.headers.get('x-gateway-cache'), 'hit', 'the bare id and provider/model share entries');
      const other = await t.openai.embeddings.create({ model: MODEL, input }).withResponse();
      assert.equal(other.response.headers.get('x-gateway-cache'), 'miss', "another model's vectors are never an answer");
    });
  });
}

describe('POST /v1/embeddings: models, limits and refusals', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0' });
    t = await gw.tenant({ providers: ['openai', 'anthropic'] });
  });
  after(() => gw.close());

  const refusal = async (body: unknown) => {
    const r = await post(gw, t, body);
    return { status: r.status, ...r.body.error };
  };

  test('unknown and chat models are 404 as for chat, a missing key 400, an Anthropic model 400 naming Anthropic, none sent upstream', async () => {
    gw.fake.calls.clear();
    assert.deepEqual(await refusal({ model: 'no-such-embedder', input: 'x' }), {
      status: 404,
      code: 'model_not_found',
      type: 'invalid_request_error',
      param: 'model',
      message: 'The model "no-such-embedder" does not exist or is ambiguous; GET /v1/models lists the models you can use.',
    });
    await assert.rejects(t.openai.embeddings.create({ model: 'gpt-4o-mini', input: 'x' }), OpenAI.NotFoundError);
    const missing = await refusal({ model: 'mistral-embed', input: 'x' });
    assert.deepEqual([missing.status, missing.code, missing.param], [400, 'provider_key_missing', 'model']);
    for (const model of ['claude-haiku-4-5', 'anthropic/claude-sonnet-4-5', 'claude-opus-9']) {
      const r = await refusal({ model, input: 'x' });
      assert.deepEqual([r.status, r.code, r.param], [400, 'embeddings_not_supported', 'model'], model);
      assert.match(r.message, new RegExp(`"${model}" is served by Anthropic, which has no embeddings API`));
    }
    await assert.rejects(t.openai.embeddings.create({ model: 'claude-haiku-4-5', input: 'x' }), OpenAI.BadRequestError);
    assert.equal(gw.fake.calls.count, 0);
  });

  test('input: one of OpenAI\'s four shapes, at most 2048 inputs; anything else is 400 naming input', async () => {
    gw.fake.calls.clear();
    for (const input of [5, [], [''.repeat(0), 3], [[1, 2], 'x'], [[]], [1.5], [-1], { text: 'x' }, null, Array.from({ length: 2049 }, () => 'x')]) {
      const r = await refusal({ model: MODEL, input });
      assert.deepEqual([r.status, r.code, r.param], [400, 'invalid_request_body', 'input'], JSON.stringify(input).slice(0, 40));
    }
    assert.match((await refusal({ model: MODEL, input: Array.from({ length: 2049 }, () => 'x') })).message, /at most 2048/);
    const noInput = await refusal({ model: MODEL });
    assert.deepEqual([noInput.status, noInput.code], [400, 'validation_failed']);
    const format = await refusal({ model: MODEL, input: 'x', encoding_format: 'int8' });
    assert.deepEqual([format.status, format.param], [400, 'encoding_format']);
    const dims = await refusal({ model: MODEL, input: 'x', dimensions: 0 });
    assert.deepEqual([dims.status, dims.param], [400, 'dimensions']);
    assert.equal(gw.fake.calls.count, 0);
    const most = await post(gw, t, { model: MODEL, input: Array.from({ length: 2048 }, (_, i) => `input ${i}`), encoding_format: 'base64' });
    assert.equal(most.status, 200);
    assert.equal(most.body.data.length, 2048);
    assert.equal(most.body.data[2047].index, 2047);
  });

  test('a tenant over its budget is refused as chat calls are, before anything is sent; the spend is what the provider billed', async () => {
    const tenant = await gw.tenant({ providers: ['openai'] });
    const limits = async (l: Record<string, number> | null) => {
      const r = await gw.api('/api/v1/tenant', { method: 'PATCH', token: tenant.session, body: { settings: { limits: l } } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    };
    await limits({ tokens_per_day: 100 });
    gw.fake.calls.clear();
    const spent = await tenant.openai.embeddings.create({ model: MODEL, input: text('budget', 20) }).withResponse();
    assert.equal(spent.data.usage.prompt_tokens, 20);
    await assert.rejects(tenant.openai.embeddings.create({ model: MODEL, input: text('too long for what is left', 90) }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal((err.error as { code: string }).code, 'token_limit_exceeded');
      return true;
    });
    assert.equal(gw.fake.calls.count, 1, 'the refused call never reached the provider');
    let day = { used: -1, reserved: -1 };
    for (let i = 0; i < 100 && (day.used !== 20 || day.reserved !== 0); i++) {
      day = (await gw.api('/api/v1/tenant/limits', { token: tenant.session })).body.tenant.usage.tokens_per_day;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(day, { ...day, used: 20, reserved: 0 }, 'settled at the 20 tokens billed, not the estimate');
    // A month's budget that the call above used up whole (a new counter starts from the usage records).
    await usageRecord(gw, spent.response.headers.get('x-gateway-request-id')!);
    await limits({ usd_per_month: priced(20) });
    await assert.rejects(tenant.openai.embeddings.create({ model: MODEL, input: 'x' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal((err.error as { code: string }).code, 'budget_exceeded');
      return true;
    });
  });

  test('a tenant\'s alias names an embedding model; the record keeps the name asked for', async () => {
    const r = await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { models: { aliases: { embedder: `openai/${MODEL}` } } } } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const { response } = await t.openai.embeddings.create({ model: 'embedder', input: 'aliased' }).withResponse();
    assert.equal(response.headers.get('x-gateway-model'), `openai/${MODEL}`);
    assert.equal(response.headers.get('x-gateway-route-reason'), `alias embedder -> openai/${MODEL}`);
    const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
    assert.deepEqual([row.model_requested, row.model_used], ['embedder', `openai/${MODEL}`]);
  });

  test('a workspace that stores bodies keeps the client\'s request and the answer it got; the console shows the saving', async () => {
    const r = await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { store_bodies: true } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await t.openai.embeddings.create({ model: MODEL, input: 'kept before' });
    const { data, response } = await t.openai.embeddings.create({ model: MODEL, input: ['kept before', 'kept now'], encoding_format: 'float' }).withResponse();
    const id = response.headers.get('x-gateway-request-id')!;
    await usageRecord(gw, id);
    const one = await gw.api(`/api/v1/tenant/requests/${id}`, { token: t.session });
    assert.equal(one.body.body_storage, 'stored');
    assert.deepEqual(JSON.parse(one.body.request_body), { model: MODEL, input: ['kept before', 'kept now'], encoding_format: 'float' });
    assert.deepEqual(JSON.parse(one.body.response_body), data);
    const page = await fetch(`${gw.url}/requests/${encodeURIComponent(id)}`, { headers: { cookie: `gw_console=${t.session}` } });
    assert.match(await page.text(), /Partial: an embeddings call[\s\S]*what the inputs answered from the cache cost/);
  });

  test('/v1/models lists the embedding models of the keyed providers with their prices; Anthropic\'s list does not', async () => {
    const list = await t.openai.models.list();
    const ids = list.data.map((m) => m.id);
    for (const id of ['openai/text-embedding-3-small', 'openai/text-embedding-3-large', 'openai/text-embedding-ada-002']) assert.ok(ids.includes(id), id);
    assert.ok(!ids.includes('mistral/mistral-embed'), 'no mistral key: not listed');
    assert.ok(ids.indexOf('openai/text-embedding-3-small') > ids.indexOf('openai/gpt-4o-mini'), 'after the chat models');
    const one = await t.openai.models.retrieve('openai/text-embedding-3-large');
    assert.deepEqual((one as unknown as { pricing: Record<string, unknown> }).pricing, {
      currency: 'USD',
      unit: 'per_million_tokens',
      input: 0.13,
      cached_input: 0.13,
      output: 0,
      read_on: '2026-12-02',
    });
    const anthropic = await fetch(`${gw.url}/v1/models?limit=1000`, { headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01' } });
    const listed = ((await anthropic.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    assert.ok(listed.length > 0);
    assert.ok(!listed.some((id) => id.includes('embedding')));
  });

  test('a chat call is never routed to an embedding model, and `auto` is not an embedding model', async () => {
    const auto = await refusal({ model: 'auto', input: 'x' });
    assert.deepEqual([auto.status, auto.code], [404, 'model_not_found']);
    const chat = await t.openai.chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.doesNotMatch(chat.response.headers.get('x-gateway-model')!, /embedding/);
  });
});
