import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';

/**
 * The fake provider's Anthropic side, checked with the official
 * @anthropic-ai/sdk over a real port, and on raw bytes where the exact
 * event sequence is the point.
 */

const SEARCH_TOOL = { name: 'search', description: 'search the web', input_schema: { type: 'object' as const, properties: { query: { type: 'string' }, exact: { type: 'boolean' } } } };

/** The SSE event names of a raw stream, in order. */
const eventNames = (raw: string) => [...raw.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);

describe('fake provider, Anthropic format', () => {
  let fake: FakeProvider;
  let client: Anthropic;
  before(async () => {
    fake = await createFakeProvider();
    client = new Anthropic({ baseURL: fake.url, apiKey: 'sk-ant-fake', maxRetries: 0, logLevel: 'off' });
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  test('messages.create echoes the last user text, reports cache usage, and the call shows the headers sent', async () => {
    fake.setBehaviour({ promptTokens: 30, completionTokens: 5, cachedTokens: 1000, cacheCreationTokens: 200 });
    const msg = await client.messages.create({
      model: 'claude-fake',
      max_tokens: 256,
      system: 'be brief',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'text', text: 'second question' }] },
      ],
    });
    assert.equal(msg.type, 'message');
    assert.match(msg.id, /^msg_/);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.deepEqual(msg.content, [{ type: 'text', text: 'echo: second question' }]);
    assert.equal(msg.usage.input_tokens, 30);
    assert.equal(msg.usage.output_tokens, 5);
    assert.equal(msg.usage.cache_read_input_tokens, 1000);
    assert.equal(msg.usage.cache_creation_input_tokens, 200);
    const call = fake.calls.last()!;
    assert.equal(call.route, 'anthropic.messages');
    // @anthropic-ai/sdk 1.x sends an API key as a bearer token; the raw requests below use x-api-key.
    assert.equal(call.headers.authorization, 'Bearer sk-ant-fake');
    assert.match(String(call.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/); // 1.12 sends 2026-10-21; any dated version is accepted
    assert.deepEqual((call.body as { system: unknown; max_tokens: unknown }).system, 'be brief');
  });

  test('messages.stream of text: the SDK assembles the message; the raw events come in Anthropic order', async () => {
    const stream = client.messages.stream({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'alpha beta' }] });
    const deltas: string[] = [];
    stream.on('text', (t) => deltas.push(t));
    const final = await stream.finalMessage();
    assert.deepEqual(deltas, ['echo:', ' alpha', ' beta']);
    assert.deepEqual(final.content, [{ type: 'text', text: 'echo: alpha beta' }]);
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.usage.output_tokens, 3);

    const raw = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-fake', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'one' }] }),
    });
    assert.match(raw.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.deepEqual(eventNames(await raw.text()), [
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  test('tool use, whole and streamed as input_json_delta fragments', async () => {
    const whole = await client.messages.create({
      model: 'claude-fake',
      max_tokens: 64,
      tools: [SEARCH_TOOL],
      tool_choice: { type: 'tool', name: 'search' },
      messages: [{ role: 'user', content: 'llamas' }],
    });
    assert.equal(whole.stop_reason, 'tool_use');
    const block = whole.content[0];
    assert.ok(block?.type === 'tool_use');
    assert.match(block.id, /^toolu_/);
    assert.deepEqual(block.input, { query: 'llamas', exact: true });

    fake.setBehaviour({ chunks: 4 });
    const stream = client.messages.stream({ model: 'claude-fake', max_tokens: 64, tools: [SEARCH_TOOL], messages: [{ role: 'user', content: 'call tool' }] });
    const fragments: string[] = [];
    stream.on('inputJson', (partial) => fragments.push(partial));
    const final = await stream.finalMessage();
    assert.equal(fragments.length, 4);
    const streamed = final.content[0];
    assert.ok(streamed?.type === 'tool_use');
    assert.deepEqual(streamed.input, { query: 'call tool', exact: true });
    assert.equal(final.stop_reason, 'tool_use');
  });

  test('status faults surface as the SDK error classes: 529 overloaded, 429 with retry-after, 401, 500', async () => {
    const ask = () => client.messages.create({ model: 'claude-fake', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
    fake.setBehaviour({ fault: '529' });
    await assert.rejects(ask(), (err) => err instanceof Anthropic.OverloadedError && err.type === 'overloaded_error');
    fake.setBehaviour({ fault: '429', retryAfterS: 3 });
    await assert.rejects(ask(), (err) => err instanceof Anthropic.RateLimitError && err.headers?.get('retry-after') === '3' && err.type === 'rate_limit_error');
    fake.setBehaviour({ fault: '401' });
    await assert.rejects(ask(), (err) => err instanceof Anthropic.AuthenticationError && err.type === 'authentication_error');
    fake.setBehaviour({ fault: '500' });
    await assert.rejects(ask(), (err) => err instanceof Anthropic.InternalServerError && err.type === 'api_error' && err.requestID !== null);
  });

  test('an overloaded_error event mid-stream raises from the SDK after the first delta', async () => {
    fake.setBehaviour({ fault: 'stream-error', faultAfterChunks: 1 });
    const stream = client.messages.stream({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'a b c' }] });
    const deltas: string[] = [];
    stream.on('text', (t) => deltas.push(t));
    await assert.rejects(stream.finalMessage(), (err) => err instanceof Anthropic.APIError && err.type === 'overloaded_error');
    assert.deepEqual(deltas, ['echo:']);
    // Not streamed, the same failure is a 529.
    await assert.rejects(client.messages.create({ model: 'claude-fake', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }), Anthropic.OverloadedError);
  });

  test('a dropped stream fails in the SDK; without message_stop it is never a clean finish', async () => {
    fake.setBehaviour({ fault: 'drop', faultAfterChunks: 1 });
    const stream = client.messages.stream({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'a b c' }] });
    await assert.rejects(stream.finalMessage());
  });

  test('requests Anthropic refuses: no x-api-key, no anthropic-version, no max_tokens, a system role in messages', async () => {
    const post = (body: unknown, headers: Record<string, string>) =>
      fetch(`${fake.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const body = { model: 'claude-fake', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] };
    const noKey = await post(body, { 'anthropic-version': '2023-06-01' });
    assert.equal(noKey.status, 401);
    const noKeyBody = (await noKey.json()) as { type: string; error: unknown; request_id: string };
    assert.equal(noKeyBody.type, 'error');
    assert.deepEqual(noKeyBody.error, { type: 'authentication_error', message: 'x-api-key header is required' });
    assert.equal(noKeyBody.request_id, noKey.headers.get('request-id'));
    const noVersion = await post(body, { 'x-api-key': 'k' });
    assert.equal(noVersion.status, 400);
    assert.deepEqual(((await noVersion.json()) as { error: unknown }).error, { type: 'invalid_request_error', message: 'anthropic-version: header is required' });

    const noMax = { model: 'claude-fake', messages: [{ role: 'user' as const, content: 'x' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    await assert.rejects(client.messages.create(noMax), (err) => err instanceof Anthropic.BadRequestError && /max_tokens: Field required/.test(err.message));
    const systemRole = { ...body, messages: [{ role: 'system', content: 'x' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    await assert.rejects(client.messages.create(systemRole), Anthropic.BadRequestError);
  });

  test('GET /v1/models with anthropic-version lists models the Anthropic way', async () => {
    const page = await client.models.list();
    assert.deepEqual(
      page.data.map((m) => [m.type, m.id]),
      [
        ['model', 'fake-model'],
        ['model', 'fake-model-mini'],
        ['model', 'claude-fake'],
      ],
    );
  });
});
