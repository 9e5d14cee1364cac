import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';

/**
 * The fake provider's OpenAI side, checked with the official openai SDK as
 * the client over a real port: if the SDK reads it right, the gateway's
 * tests can trust it.
 */

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } },
};

describe('fake provider, OpenAI format', () => {
  let fake: FakeProvider;
  let client: OpenAI;
  before(async () => {
    fake = await createFakeProvider();
    client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: 'sk-fake-test', maxRetries: 0, logLevel: 'off' });
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  test('a completion echoes the last user text and reports every usage field', async () => {
    fake.setBehaviour({ promptTokens: 120, completionTokens: 7, cachedTokens: 100, reasoningTokens: 3 });
    const res = await client.chat.completions.create({
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hello there' }] },
      ],
    });
    assert.equal(res.object, 'chat.completion');
    assert.equal(res.model, 'fake-model');
    assert.equal(res.choices[0]?.message.content, 'echo: hello there');
    assert.equal(res.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(
      {
        prompt: res.usage?.prompt_tokens,
        completion: res.usage?.completion_tokens,
        total: res.usage?.total_tokens,
        cached: res.usage?.prompt_tokens_details?.cached_tokens,
        reasoning: res.usage?.completion_tokens_details?.reasoning_tokens,
      },
      { prompt: 120, completion: 7, total: 127, cached: 100, reasoning: 3 },
    );
    assert.equal(fake.calls.count, 1);
    const call = fake.calls.last()!;
    assert.equal(call.route, 'openai.chat');
    assert.equal(call.headers.authorization, 'Bearer sk-fake-test');
    assert.equal((call.body as { messages: unknown[] }).messages.length, 2);
  });

  test('a stream with include_usage: role chunk, one delta per word, finish, a usage chunk with no choices, [DONE]', async () => {
    fake.setBehaviour({ cachedTokens: 4 });
    const stream = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'one two three' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.equal(text, 'echo: one two three');
    assert.equal(chunks.filter((c) => c.choices[0]?.delta.content).length, 4);
    assert.equal(chunks.at(-2)?.choices[0]?.finish_reason, 'stop');
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage?.completion_tokens, 4);
    assert.equal(last.usage?.prompt_tokens_details?.cached_tokens, 4);
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
  });

  test('a stream without include_usage has no usage chunk, and chunks: n splits the text in n deltas', async () => {
    fake.setBehaviour({ chunks: 2, text: 'abcdef' });
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }], stream: true });
    const deltas: string[] = [];
    let sawUsage = false;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      if ('usage' in chunk) sawUsage = true;
    }
    assert.deepEqual(deltas, ['abc', 'def']);
    assert.equal(sawUsage, false);
  });

  test('tool_choice naming a function answers with a call whose arguments fit its schema', async () => {
    const res = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'Paris' }],
      tools: [{ type: 'function', function: { name: 'other' } }, WEATHER_TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const choice = res.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    const call = choice.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris', days: 1 });
  });

  test('"call tool" in the user text streams a tool call the SDK reassembles; tool_choice none answers text', async () => {
    const stream = client.chat.completions.stream({ model: 'fake-model', messages: [{ role: 'user', content: 'please call tool' }], tools: [WEATHER_TOOL] });
    const final = await stream.finalChatCompletion();
    const call = final.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'please call tool', days: 1 });
    assert.equal(final.choices[0]?.finish_reason, 'tool_calls');

    const none = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'call tool' }], tools: [WEATHER_TOOL], tool_choice: 'none' });
    assert.equal(none.choices[0]?.message.content, 'echo: call tool');
  });

  test('status faults surface as the SDK error classes, with Retry-After on 429', async () => {
    fake.setBehaviour({ fault: '429', retryAfterS: 7 });
    const ask = () => client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] });
    await assert.rejects(ask(), (err) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.equal(err.headers?.get('retry-after'), '7');
      assert.equal(err.code, 'rate_limit_exceeded');
      return true;
    });
    fake.setBehaviour({ fault: '401' });
    await assert.rejects(ask(), (err) => err instanceof OpenAI.AuthenticationError && err.code === 'invalid_api_key');
    fake.setBehaviour({ fault: '500' });
    await assert.rejects(ask(), (err) => err instanceof OpenAI.InternalServerError && err.status === 500 && err.type === 'server_error');
    fake.setBehaviour({ fault: '529' });
    await assert.rejects(ask(), (err) => err instanceof OpenAI.InternalServerError && err.status === 529);
  });

  test('a behaviour scoped to the next request: the SDK retries the 429 and the second call succeeds', async () => {
    fake.setBehaviour({ fault: '429', retryAfterS: 0 }, { requests: 1 });
    const retrying = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: 'sk-fake-test', maxRetries: 1 });
    const res = await retrying.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'again' }] });
    assert.equal(res.choices[0]?.message.content, 'echo: again');
    assert.equal(fake.calls.count, 2);
  });

  test('scoped behaviours queue in order over the server-wide one, and reset() clears them', async () => {
    fake.setBehaviour({ text: 'base' });
    fake.setBehaviour({ fault: '500' }, { requests: 2 });
    fake.setBehaviour({ fault: '401' }, { requests: 1 });
    const ask = () => client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] });
    await assert.rejects(ask(), OpenAI.InternalServerError);
    await assert.rejects(ask(), OpenAI.InternalServerError);
    await assert.rejects(ask(), OpenAI.AuthenticationError);
    assert.equal((await ask()).choices[0]?.message.content, 'base');
    fake.setBehaviour({ fault: '500' }, { requests: 1 });
    fake.reset();
    assert.equal((await ask()).choices[0]?.message.content, 'echo: x');
    assert.equal(fake.calls.count, 1);
  });

  test('an error mid-stream raises from the iteration after the first delta', async () => {
    fake.setBehaviour({ fault: 'stream-error', faultAfterChunks: 1 });
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'a b c' }], stream: true });
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? '');
      })(),
      (err) => err instanceof OpenAI.APIError && err.type === 'server_error',
    );
    assert.deepEqual(seen, ['', 'echo:']);
  });

  test('a stream dropped midway and a garbage answer fail in the client, never as a clean finish', async () => {
    fake.setBehaviour({ fault: 'drop', faultAfterChunks: 2 });
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'a b c' }], stream: true });
    await assert.rejects(async () => {
      for await (const _ of stream);
    });
    fake.setBehaviour({ fault: 'garbage' });
    await assert.rejects(client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] }));
    const garbled = await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }], stream: true });
    await assert.rejects(async () => {
      for await (const _ of garbled);
    }, SyntaxError);
  });

  test('hang never answers: the client times out; latency delays the answer', async () => {
    fake.setBehaviour({ fault: 'hang' }, { requests: 1 });
    await assert.rejects(
      client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] }, { timeout: 200 }),
      OpenAI.APIConnectionTimeoutError,
    );
    fake.setBehaviour({ latencyMs: 80 });
    const t0 = performance.now();
    await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] });
    assert.ok(performance.now() - t0 >= 75);
  });

  test('x-fake-* request headers override the behaviour for that request only', async () => {
    const ask = (headers?: Record<string, string>) => client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] }, headers ? { headers } : {});
    await assert.rejects(ask({ 'x-fake-fault': '500' }), OpenAI.InternalServerError);
    assert.equal((await ask({ 'x-fake-text': 'fixed' })).choices[0]?.message.content, 'fixed');
    assert.equal((await ask()).choices[0]?.message.content, 'echo: x');
    await assert.rejects(ask({ 'x-fake-fault': 'nonsense' }), OpenAI.BadRequestError);
  });

  test('a path prefix before /v1/ is ignored; models are listed; an unknown path is a 404', async () => {
    const prefixed = new OpenAI({ baseURL: `${fake.url}/openai/v1`, apiKey: 'k', maxRetries: 0 });
    const models = await prefixed.models.list();
    assert.deepEqual(
      models.data.map((m) => m.id),
      ['fake-model', 'fake-model-mini', 'claude-fake'],
    );
    await assert.rejects(prefixed.moderations.create({ input: 'x' }), OpenAI.NotFoundError);
  });

  test('requests the real API refuses: no key, a wrong key, no model, no messages', async () => {
    const post = (body: unknown, headers: Record<string, string> = { authorization: 'Bearer k' }) =>
      fetch(`${fake.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const noKey = await post({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, {});
    assert.equal(noKey.status, 401);
    assert.match(((await noKey.json()) as { error: { message: string } }).error.message, /didn't provide an API key/);
    const noModel = await post({ messages: [{ role: 'user', content: 'x' }] });
    assert.deepEqual(((await noModel.json()) as { error: unknown }).error, { message: 'you must provide a model parameter', type: 'invalid_request_error', param: 'model', code: null });
    assert.equal((await post({ model: 'm' })).status, 400);
    assert.equal((await post('not an object')).status, 400);

    const strict = await createFakeProvider({ apiKey: 'sk-right' });
    try {
      const wrong = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
      await assert.rejects(wrong.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }), OpenAI.AuthenticationError);
      await assert.rejects(wrong.models.list(), OpenAI.AuthenticationError);
      const right = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'sk-right', maxRetries: 0 });
      assert.ok((await right.models.list()).data.length > 0);
    } finally {
      await strict.close();
    }
  });
});
