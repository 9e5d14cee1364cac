import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/**
 * OpenAI's Responses API through the gateway, with the official `openai`
 * SDK, against the fake provider's Responses, Chat Completions and Messages
 * sides: the conversation state is the gateway's, every upstream call is
 * stateless, and a chain of responses can move between providers.
 */
describe('the Responses surface through the openai SDK', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite');
    t = await gw.tenant();
  });
  after(() => gw.close());

  type Sent = { url: string; body: Record<string, unknown>; headers: Record<string, string | string[] | undefined> };
  const last = () => gw.fake.calls.last() as unknown as Sent;

  test('create: the response comes back with the gateway headers and a usage record; upstream the call was stateless', async () => {
    gw.fake.setBehaviour({ promptTokens: 120, cachedTokens: 64, completionTokens: 9 }, { requests: 1 });
    const { data, response } = await t.openai.responses.create({ model: 'gpt-4o-mini', input: 'hello there', instructions: 'Be brief.' }).withResponse();
    assert.equal(data.object, 'response');
    assert.equal(data.status, 'completed');
    assert.match(data.output_text, /hello there/);
    assert.equal((data as unknown as { store: boolean }).store, true, 'the client asked (by default) for a stored response: the echo says so');
    assert.deepEqual({ i: data.usage?.input_tokens, c: data.usage?.input_tokens_details.cached_tokens, o: data.usage?.output_tokens }, { i: 120, c: 64, o: 9 });
    const sent = last();
    assert.equal(sent.url, '/v1/responses');
    assert.equal(sent.body['store'], false, 'OpenAI keeps nothing: the gateway does');
    assert.deepEqual(sent.body['include'], ['reasoning.encrypted_content']);
    assert.equal(sent.body['instructions'], 'Be brief.');
    assert.equal(sent.headers['authorization'], `Bearer ${t.providerKeys['openai']}`);
    const id = response.headers.get('x-gateway-request-id')!;
    assert.equal(response.headers.get('x-gateway-provider'), 'openai');
    const row = await usageRecord(gw, id);
    assert.equal(row.surface, 'responses');
    assert.equal(row.prompt_tokens, 120);
    assert.equal(row.cached_tokens, 64);
    assert.ok(row.cost_usd > 0);
    const stored = await t.openai.responses.retrieve(data.id);
    assert.equal(stored.id, data.id);
    assert.equal(stored.output_text, data.output_text);
  });

  test('stream: the SDK\'s event helpers and finalResponse(); events numbered in order; cost in the final usage', async () => {
    gw.fake.setBehaviour({ text: 'one two three four', promptTokens: 50, completionTokens: 7 }, { requests: 1 });
    const stream = t.openai.responses.stream({ model: 'gpt-4o-mini', input: 'count' });
    const deltas: string[] = [];
    const types: string[] = [];
    const sequence: number[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    stream.on('event', (event) => {
      types.push(event.type);
      sequence.push(event.sequence_number);
    });
    const final = await stream.finalResponse();
    assert.equal(final.output_text, 'one two three four');
    assert.ok(deltas.length > 1, 'several deltas arrived');
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.deepEqual(sequence, [...sequence].sort((a, b) => a - b), 'sequence numbers rise');
    assert.equal(final.usage?.output_tokens, 7);
    assert.ok(typeof (final.usage as unknown as { cost?: number }).cost === 'number', "the gateway's cost, as in Chat Completions' usage chunk");
    const again = await t.openai.responses.retrieve(final.id);
    assert.equal(again.output_text, 'one two three four', 'a streamed response is stored too');
  });

  test('function calling round trip with previous_response_id: the chain expanded, the function_call_output after its call', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false },
    ];
    const first = await t.openai.responses.create({ model: 'gpt-4o-mini', input: 'weather in Paris?', tools, tool_choice: 'required' });
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call && call.type === 'function_call', 'the model called the tool');
    assert.equal(call.name, 'get_weather');
    const second = await t.openai.responses.create({
      model: 'gpt-4o-mini',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' }],
      tools,
    });
    assert.match(second.output_text, /sunny, 21 C/);
    assert.equal(second.previous_response_id, first.id);
    const sent = last().body;
    assert.equal(sent['previous_response_id'], undefined, 'OpenAI is never asked to remember');
    const input = sent['input'] as Record<string, unknown>[];
    const kinds = input.map((item) => item['type'] ?? item['role']);
    assert.deepEqual(kinds, ['message', 'function_call', 'function_call_output']);
    assert.equal(input[1]!['call_id'], call.call_id);
    assert.equal(input[1]!['id'], undefined, 'ids of items OpenAI did not store are left out');
  });

  test('a chain of several turns: each turn upstream carries every earlier turn, oldest first', async () => {
    let previous: string | undefined;
    for (const word of ['alpha', 'bravo', 'charlie', 'delta']) {
      const r: OpenAI.Responses.Response = await t.openai.responses.create({ model: 'gpt-4o-mini', input: `say ${word}`, ...(previous ? { previous_response_id: previous } : {}) });
      previous = r.id;
    }
    const input = last().body['input'] as { role?: string; content: unknown }[];
    const users = input.filter((item) => item.role === 'user').map((item) => JSON.stringify(item.content));
    assert.equal(users.length, 4);
    assert.deepEqual(
      users.map((text) => /say (\w+)/.exec(text)?.[1]),
      ['alpha', 'bravo', 'charlie', 'delta'],
    );
    assert.equal(input.filter((item) => item.role === 'assistant').length, 3, "each earlier turn's answer is there");
    const items = await t.openai.responses.inputItems.list(previous!, { order: 'asc', limit: 100 });
    assert.equal(items.data.length, 7, 'the input items of the last response: 4 questions and 3 answers');
  });

  test('a chain that falls back from OpenAI to Anthropic mid-way, and continues', async () => {
    const u = await gw.tenant();
    const set = await gw.api('/api/v1/tenant', { method: 'PATCH', token: u.session, body: { settings: { routing: { fallbacks: { 'openai/gpt-4o-mini': ['anthropic/claude-haiku-4-5'] } } } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const first = await u.openai.responses.create({ model: 'gpt-4o-mini', input: 'remember the word heron' });
    gw.fake.setBehaviourFor({ apiKey: u.providerKeys['openai']! }, { fault: '500' });
    const { data: second, response } = await u.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: first.id, input: 'what was the word?' }).withResponse();
    gw.fake.setBehaviourFor({ apiKey: u.providerKeys['openai']! }, undefined);
    assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
    assert.match(response.headers.get('x-gateway-route-reason') ?? '', /fallback/);
    assert.equal(second.object, 'response');
    assert.match(second.output_text, /what was the word/);
    const toAnthropic = last();
    assert.equal(toAnthropic.url, '/v1/messages');
    const messages = toAnthropic.body['messages'] as { role: string }[];
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'user'],
      "the first turn, OpenAI's answer and this question",
    );
    const third = await u.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: second.id, input: 'thanks' });
    assert.equal(third.status, 'completed');
    const input = last().body['input'] as { role?: string }[];
    assert.equal(last().url, '/v1/responses');
    assert.deepEqual(
      input.map((item) => item.role),
      ['user', 'assistant', 'user', 'assistant', 'user'],
      "Anthropic's answer is in the chain OpenAI now gets",
    );
  });

  test('reasoning carries across turns to OpenAI untouched, and is dropped (and recorded) for a provider that cannot take it', async () => {
    const u = await gw.tenant();
    const set = await gw.api('/api/v1/tenant', { method: 'PATCH', token: u.session, body: { settings: { routing: { fallbacks: { 'openai/gpt-5': ['anthropic/claude-haiku-4-5'] } } } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    gw.fake.setBehaviour({ thinking: 'Think about herons.' });
    try {
      const first = await u.openai.responses.create({ model: 'gpt-5', input: 'a bird?', reasoning: { summary: 'auto' } });
      const reasoning = first.output.find((item) => item.type === 'reasoning');
      assert.ok(reasoning && typeof reasoning.encrypted_content === 'string', 'the gateway asked for encrypted reasoning on its own');
      // The fake refuses (400 invalid_encrypted_content) a reasoning item that comes back changed.
      const second = await u.openai.responses.create({ model: 'gpt-5', previous_response_id: first.id, input: 'which one?', reasoning: { summary: 'auto' } });
      assert.equal(second.status, 'completed');
      const sentItems = last().body['input'] as { type?: string; encrypted_content?: string }[];
      assert.equal(sentItems.find((item) => item.type === 'reasoning')?.encrypted_content, reasoning.encrypted_content);
      gw.fake.setBehaviourFor({ apiKey: u.providerKeys['openai']! }, { fault: '500' });
      const { data: third, response } = await u.openai.responses.create({ model: 'gpt-5', previous_response_id: second.id, input: 'and now?' }).withResponse();
      gw.fake.setBehaviourFor({ apiKey: u.providerKeys['openai']! }, undefined);
      assert.equal(third.status, 'completed');
      assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
      assert.equal(response.headers.get('x-gateway-reasoning-dropped'), '2', "both of OpenAI's reasoning items");
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.match(row.usage_flags ?? '', /reasoning_dropped/);
    } finally {
      gw.fake.setBehaviour({ thinking: undefined });
    }
  });

  test('a chain sends one prompt_cache_key, from its first response, on every later turn; the client\'s own is kept', async () => {
    const first = await t.openai.responses.create({ model: 'gpt-4o-mini', input: 'start' });
    const second = await t.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: first.id, input: 'go on' });
    const key = last().body['prompt_cache_key'];
    assert.match(String(key), /^gw-[A-Za-z0-9_-]{32}$/);
    assert.ok(!String(key).includes(first.id), 'no id reaches the provider');
    await t.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: second.id, input: 'and on' });
    assert.equal(last().body['prompt_cache_key'], key, 'the same key on the third turn');
    const other = await t.openai.responses.create({ model: 'gpt-4o-mini', input: 'another conversation' });
    await t.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: other.id, input: 'go on' });
    assert.notEqual(last().body['prompt_cache_key'], key, 'another chain, another key');
    await t.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: second.id, input: 'mine', prompt_cache_key: 'client-key' });
    assert.equal(last().body['prompt_cache_key'], 'client-key');
  });

  test('structured output: text.format to OpenAI as sent; translated to response_format for another provider', async () => {
    const u = await gw.tenant({ providers: ['openai', 'groq'] });
    const format = { type: 'json_schema', name: 'city', schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false }, strict: true } as const;
    const r = await u.openai.responses.create({ model: 'gpt-4o-mini', input: 'a city', text: { format } });
    assert.deepEqual((last().body['text'] as { format: unknown }).format, format);
    assert.deepEqual((r.text!.format as unknown as { name: string }).name, 'city', 'the response echoes the format');
    const g = await u.openai.responses.create({ model: 'groq/llama-3.3-70b-versatile', input: 'a city', text: { format } });
    assert.equal(last().url, '/v1/chat/completions');
    assert.deepEqual(last().body['response_format'], { type: 'json_schema', json_schema: { name: 'city', schema: format.schema, strict: true } });
    assert.equal(g.object, 'response');
    assert.equal((g.text!.format as unknown as { name: string }).name, 'city');
  });

  test('store: false keeps nothing and goes upstream as the client sent it', async () => {
    const body = { model: 'gpt-4o-mini', input: 'ephemeral', store: false, client_metadata: { originator: 'test' }, prompt_cache_key: 'mine' };
    const r = await t.openai.responses.create(body as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const sent = last().body;
    assert.deepEqual(sent, body, 'field for field, unknown ones included');
    await assert.rejects(t.openai.responses.retrieve(r.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  test('retrieve, inputItems.list and delete; another tenant sees none of it', async () => {
    const r = await t.openai.responses.create({ model: 'gpt-4o-mini', input: [{ role: 'user', content: 'keep me' }] });
    const other = await gw.tenant();
    await assert.rejects(other.openai.responses.retrieve(r.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    await assert.rejects(
      other.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: r.id, input: 'steal' }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /not found/i.test(err.message),
    );
    const items = await t.openai.responses.inputItems.list(r.id);
    assert.equal(items.data.length, 1);
    const deleted = (await t.openai.responses.delete(r.id)) as unknown as { id: string; deleted: boolean };
    assert.deepEqual({ id: deleted.id, deleted: deleted.deleted }, { id: r.id, deleted: true });
    await assert.rejects(t.openai.responses.retrieve(r.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  test('the session-id header (Codex) names the session', async () => {
    const { response } = await t.openai.responses.create({ model: 'gpt-4o-mini', input: 'hi', store: false }, { headers: { 'session-id': 'codex-session-1' } }).withResponse();
    const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
    assert.equal(row.session_id, 'codex-session-1');
  });

  test('to Anthropic through an alias: tools and structured output translated, the answer a response', async () => {
    const u = await gw.tenant();
    const set = await gw.api('/api/v1/tenant', { method: 'PATCH', token: u.session, body: { settings: { models: { aliases: { 'gpt-4o-mini': 'anthropic/claude-haiku-4-5' } } } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const { data, response } = await u.openai.responses
      .create({
        model: 'gpt-4o-mini',
        input: 'weather?',
        tools: [
          { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: false },
          { type: 'web_search' },
          { type: 'file_search', vector_store_ids: ['vs_1'] },
        ],
        tool_choice: 'required',
      })
      .withResponse();
    assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
    assert.equal(response.headers.get('x-gateway-omitted-tools'), 'file_search');
    const call = data.output.find((item) => item.type === 'function_call');
    assert.ok(call, 'the tool call came back as a function_call item');
    const tools = last().body['tools'] as { name: string; type?: string }[];
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['get_weather', 'web_search'],
      "OpenAI's web search became Anthropic's",
    );
    await assert.rejects(
      u.openai.responses.create({ model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }], tool_choice: { type: 'file_search' } }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /file_search/.test(err.message),
    );
  });

  test('a stream that fails mid-way: OpenAI\'s error and response.failed reach the client, the SDK raises, nothing is stored', async () => {
    const raw = async () => {
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', input: 'fail midway', stream: true }),
      });
      return res.text();
    };
    gw.fake.setBehaviour({ fault: 'stream-error', faultAfterChunks: 2, chunkDelayMs: 5 }, { requests: 1 });
    const relayed = await raw();
    assert.match(relayed, /event: error\n[\s\S]*event: response\.failed\n/);
    assert.doesNotMatch(relayed, /response\.completed/);
    gw.fake.setBehaviour({ fault: 'drop', faultAfterChunks: 2, chunkDelayMs: 5 }, { requests: 1 });
    const cut = await raw();
    const events = [...cut.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    assert.deepEqual(events.slice(-2), ['error', 'response.failed'], 'the gateway ends a broken stream as OpenAI would');
    const failed = JSON.parse(cut.trim().split('\n').at(-1)!.slice(6)) as { sequence_number: number; response: { id: string; status: string } };
    assert.equal(failed.response.status, 'failed');
    await assert.rejects(t.openai.responses.retrieve(failed.response.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
    gw.fake.setBehaviour({ fault: 'stream-error', faultAfterChunks: 1, chunkDelayMs: 5 }, { requests: 1 });
    // OpenAI's own error event, relayed as it came (the SDK raises its data as it is).
    await assert.rejects(t.openai.responses.stream({ model: 'gpt-4o-mini', input: 'fail for the sdk' }).finalResponse(), (err: unknown) => (err as { code?: string }).code === 'server_error');
  });

  test('errors in OpenAI\'s shape: unknown model, unknown previous response, a malformed body', async () => {
    await assert.rejects(t.openai.responses.create({ model: 'nope/nothing', input: 'x' }), (err: unknown) => err instanceof OpenAI.APIError && err.status === 404);
    await assert.rejects(
      t.openai.responses.create({ model: 'gpt-4o-mini', input: 'x', previous_response_id: 'resp_doesnotexist' }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && (err.error as { param?: string }).param === 'previous_response_id',
    );
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', input: 42 }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'invalid_request_error');
  });
});

describe('the Responses surface and the response cache', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true' });
    t = await gw.tenant();
  });
  after(() => gw.close());

  test('a streamed answer is replayed as the same event sequence, and answers a non-streamed request too', async () => {
    const ask = { model: 'gpt-4o-mini', input: 'cache me please', store: false } as const;
    const read = async () => {
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...ask, stream: true }),
      });
      return { status: res.headers.get('x-gateway-cache'), text: await res.text() };
    };
    const before = gw.fake.calls.count;
    const first = await read();
    const second = await read();
    assert.equal(first.status, 'miss');
    assert.equal(second.status, 'hit');
    const strip = (text: string) => text.replace(/"cost":[0-9.e-]+/g, '"cost":0');
    assert.equal(strip(second.text), strip(first.text), 'the same events, in order, with their sequence numbers');
    const whole = await t.openai.responses.create(ask).withResponse();
    assert.equal(whole.response.headers.get('x-gateway-cache'), 'hit');
    assert.equal(whole.data.object, 'response');
    assert.match(whole.data.output_text, /cache me please/);
    assert.equal(gw.fake.calls.count - before, 1, 'one upstream call in all');
  });

  test('dedup: two identical concurrent streams make one upstream call; both clients get the whole event sequence', async () => {
    gw.fake.setBehaviour({ chunkDelayMs: 30 }, { requests: 1 });
    const post = async () => {
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', input: 'share this answer', store: false, stream: true }),
      });
      return { cache: res.headers.get('x-gateway-cache'), text: await res.text() };
    };
    const before = gw.fake.calls.count;
    const [a, b] = await Promise.all([post(), post()]);
    assert.equal(gw.fake.calls.count - before, 1);
    assert.deepEqual([a.cache, b.cache].sort(), ['dedup', 'miss']);
    const strip = (text: string) => text.replace(/"cost":[0-9.e-]+/g, '"cost":0');
    assert.equal(strip(a.text), strip(b.text));
    assert.match(a.text, /event: response\.completed\n/);
  });

  test('a chain turn answered from the cache is still stored: the next turn finds it', async () => {
    const first = await t.openai.responses.create({ model: 'gpt-4o-mini', input: 'a cached turn' });
    const again = await t.openai.responses.create({ model: 'gpt-4o-mini', input: 'a cached turn' }).withResponse();
    assert.equal(again.response.headers.get('x-gateway-cache'), 'hit');
    assert.equal(again.data.id, first.id, 'a reused answer keeps its id');
    const next = await t.openai.responses.create({ model: 'gpt-4o-mini', previous_response_id: again.data.id, input: 'and then?' });
    assert.equal(next.status, 'completed');
    // A streamed hit is stored too (from the last event it was sent), under the id it carries.
    await t.openai.responses.delete(first.id);
    const streamed = await t.openai.responses.stream({ model: 'gpt-4o-mini', input: 'a cached turn' }).finalResponse();
    assert.equal(streamed.id, first.id);
    const stored = await t.openai.responses.retrieve(streamed.id);
    assert.equal(stored.output_text, first.output_text);
    assert.ok(!gw.logs.some((line) => line.includes('could not be stored')), 'storing a reused answer again is no error');
  });
});
