import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { decodeMessages } from '../../../src/gateway/surfaces/messages/to-chat.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';
import { until } from '../pipeline/cache-helpers.ts';

type Body = Record<string, unknown>;

/** A message as the API sent it: without the fields the SDK's stream helper adds to the message it builds. */
function sent(message: Anthropic.Message): Record<string, unknown> {
  const { parsed_output: _parsed, stop_details: _details, ...rest } = message as Anthropic.Message & { parsed_output?: unknown; stop_details?: unknown };
  return rest;
}

/**
 * The response cache and in-flight dedup on the Messages surface, through
 * the real app with the official @anthropic-ai/sdk and raw HTTP, against
 * the fake provider's Anthropic side: a cached answer replayed as the same
 * event sequence, either form answering either kind of request, identical
 * concurrent calls sharing one upstream call, and keys that keep apart
 * what must not share an answer.
 */
describe('the response cache and dedup on the Messages surface', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  let claude: Anthropic;
  before(async () => {
    // Failures reach the client as they are: no retries, no fallbacks.
    gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0' });
  });
  after(() => gw.close());
  const fresh = async () => {
    gw.fake.reset();
    t = await gw.tenant();
    claude = new Anthropic({ baseURL: gw.url, apiKey: t.apiKey, maxRetries: 0 });
  };

  /** A POST to /v1/messages with the body sent as given; the answer's text as it came. */
  async function post(body: Body, headers: Record<string, string> = {}) {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  /** An agent turn: thinking on (the fake signs its thinking block) and a tool it is asked to call. */
  const agentTurn = (text: string, extra: Body = {}): Body => ({
    model: 'claude-haiku-4-5',
    max_tokens: 1024,
    thinking: { type: 'enabled', budget_tokens: 512 },
    tools: [{ name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } }],
    messages: [{ role: 'user', content: `${text}: call tool Read` }],
    ...extra,
  });

  test('a hit replays a streamed answer as the same event sequence, byte for byte; its record says hit, cost 0, the cost saved', async () => {
    await fresh();
    gw.fake.setBehaviour({ thinking: 'I will read the file first.', chunkDelayMs: 2, promptTokens: 400, cachedTokens: 100, completionTokens: 12 });
    const body = agentTurn('replay me', { stream: true });
    const miss = await post(body);
    const hit = await post(body);
    assert.equal(gw.fake.calls.count, 1, 'the second call never reached the provider');
    assert.equal(miss.headers.get('x-gateway-cache'), 'miss');
    assert.equal(hit.headers.get('x-gateway-cache'), 'hit');
    assert.ok(hit.headers.get('x-gateway-cache-age') !== null);
    assert.equal(hit.headers.get('request-id'), hit.headers.get('x-gateway-request-id'), "the hit's own request id, as every Messages answer has");
    for (const event of ['message_start', 'thinking_delta', 'signature_delta', 'input_json_delta', 'ping', 'message_delta']) {
      assert.ok(miss.text.includes(event), `the answer has ${event}`);
    }
    // The ids are the provider's message and tool-use ids, replayed as they were: no id differs.
    assert.equal(hit.text, miss.text, 'the same events, in the same order, with the same data');
    assert.ok(hit.text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n'));

    const paid = await usageRecord(gw, miss.headers.get('x-gateway-request-id')!);
    const reused = await usageRecord(gw, hit.headers.get('x-gateway-request-id')!);
    assert.equal(paid.cache_status, 'miss');
    assert.ok(paid.cost_usd > 0);
    assert.equal(reused.surface, 'messages');
    assert.deepEqual([reused.cache_status, reused.cost_usd, reused.prompt_tokens, reused.completion_tokens], ['hit', 0, 0, 0]);
    assert.equal(reused.saved_tokens, paid.prompt_tokens + paid.completion_tokens);
    assert.ok(Math.abs(reused.saved_cache_usd - paid.cost_usd) < 1e-12, 'the hit saved what the answer cost');
    assert.equal(hit.headers.get('x-gateway-tokens-saved'), String(reused.saved_tokens));
  });

  test('a streamed answer answers a later non-streamed request with the message the stream built (the SDK\'s final message)', async () => {
    await fresh();
    gw.fake.setBehaviour({ thinking: 'Reading is the way.', completionTokens: 9 });
    const body = agentTurn('stream first') as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const stream = claude.messages.stream(body);
    const streamed = await stream.finalMessage();
    const { data, response } = await claude.messages.create(body).withResponse();
    assert.equal(response.headers.get('x-gateway-cache'), 'hit');
    assert.equal(gw.fake.calls.count, 1);
    assert.deepEqual(
      data.content.map((b) => b.type),
      ['thinking', 'tool_use'],
    );
    assert.deepEqual(data, sent(streamed), 'the joined events are the message: thinking and its signature, the tool input parsed, stop reason, usage');
    assert.equal(data.stop_reason, 'tool_use');
    assert.deepEqual((data.content[1] as Anthropic.ToolUseBlock).input, { file_path: 'stream first: call tool Read' }, 'input_json_delta pieces joined and parsed');
  });

  test('a non-streamed answer answers a later stream: cut into Anthropic\'s events, the SDK\'s stream helpers build the same message', async () => {
    await fresh();
    gw.fake.setBehaviour({ thinking: 'Cut me into events.', completionTokens: 9 });
    const body = agentTurn('complete first') as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const complete = await claude.messages.create(body);
    const stream = claude.messages.stream(body);
    const thinking: string[] = [];
    stream.on('thinking', (delta) => thinking.push(delta));
    const streamed = await stream.finalMessage();
    assert.equal((await stream.withResponse()).response.headers.get('x-gateway-cache'), 'hit');
    assert.equal(gw.fake.calls.count, 1);
    assert.deepEqual(sent(streamed), complete);
    assert.equal(thinking.join(''), 'Cut me into events.');

    // As the SDK sent it: anthropic-version is in the key.
    const raw = await post({ ...body, stream: true }, { 'anthropic-version': String(gw.fake.calls.last()!.headers['anthropic-version']) });
    assert.equal(raw.headers.get('x-gateway-cache'), 'hit');
    const events = [...raw.text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    assert.deepEqual(events, [
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  test('dedup: two identical concurrent streams make one upstream call, and both clients get the whole event sequence', async () => {
    await fresh();
    gw.fake.setBehaviour({ chunkDelayMs: 30, chunks: 6, thinking: 'Share this.' });
    const body = agentTurn('together', { stream: true });
    const [a, b] = await Promise.all([post(body), post(body)]);
    assert.equal(gw.fake.calls.count, 1);
    assert.deepEqual([a.headers.get('x-gateway-cache'), b.headers.get('x-gateway-cache')].sort(), ['dedup', 'miss']);
    assert.equal(a.text, b.text);
    assert.ok(a.text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n'));
    const follower = [a, b].find((r) => r.headers.get('x-gateway-cache') === 'dedup')!;
    const row = await usageRecord(gw, follower.headers.get('x-gateway-request-id')!);
    assert.deepEqual([row.cache_status, row.cost_usd, row.status], ['dedup', 0, 200]);
    assert.ok(row.saved_cache_usd > 0);
  });

  test('dedup: a late joiner first receives the events it missed, then the rest live; a non-streaming joiner gets the joined message', async () => {
    await fresh();
    gw.fake.setBehaviour({ chunkDelayMs: 60, chunks: 8 });
    const body = { model: 'claude-haiku-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'one two three four five six seven eight' }] };
    const first = post(body);
    await until(() => gw.fake.calls.count === 1, 'the first call upstream');
    await new Promise((r) => setTimeout(r, 250));
    const [late, whole] = await Promise.all([post(body), post({ ...body, stream: false })]);
    assert.equal(late.headers.get('x-gateway-cache'), 'dedup');
    assert.equal(late.text, (await first).text);
    assert.equal(whole.headers.get('x-gateway-cache'), 'dedup');
    const message = JSON.parse(whole.text);
    assert.equal(message.type, 'message');
    assert.deepEqual(message.content, [{ type: 'text', text: 'echo: one two three four five six seven eight' }]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(gw.fake.calls.count, 1);
  });

  test('a mid-stream error reaches every client sharing the stream as Anthropic\'s error event, and nothing is stored', async () => {
    await fresh();
    gw.fake.setBehaviour({ chunkDelayMs: 40, chunks: 6, fault: 'stream-error', faultAfterChunks: 2 });
    const body = { model: 'claude-haiku-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'this will break midway' }] };
    const first = post(body);
    await until(() => gw.fake.calls.count === 1, 'the first call upstream');
    const [a, b, whole] = await Promise.all([first, post(body), post({ ...body, stream: false })]);
    assert.equal(gw.fake.calls.count, 1);
    assert.equal(b.headers.get('x-gateway-cache'), 'dedup');
    // A non-streaming client waiting for the whole answer gets the provider's error in Anthropic's shape, with the
    // status the gateway answers a provider's overload with (503, as for a non-streamed 529).
    assert.equal(whole.status, 503);
    assert.equal(JSON.parse(whole.text).error.type, 'overloaded_error');
    for (const r of [a, b]) {
      const last = r.text.trimEnd().split('\n\n').at(-1)!;
      assert.match(last, /^event: error\ndata: /);
      const data = JSON.parse(last.slice(last.indexOf('data: ') + 6));
      assert.equal(data.type, 'error');
      assert.equal(data.error.type, 'overloaded_error');
      assert.ok(!r.text.includes('message_stop'));
      assert.ok(!r.text.includes('[DONE]'), 'no OpenAI terminal event on a Messages stream');
    }
    assert.equal(b.text, a.text);
    // The SDK raises it as an error, as Anthropic's own stream would.
    gw.fake.setBehaviour({ chunkDelayMs: 0, fault: 'stream-error', faultAfterChunks: 2 });
    await assert.rejects(claude.messages.stream(body as unknown as Anthropic.MessageCreateParamsNonStreaming).finalMessage(), /Overloaded|overloaded/);
    assert.equal(gw.fake.calls.count, 2, 'the failed answer was not stored');
  });

  test('a Messages call and a Chat Completions call of the same content to the same model never share an entry', async () => {
    await fresh();
    const messages: Anthropic.MessageCreateParamsNonStreaming = { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'same words, two doors' }] };
    const { chat } = decodeMessages({ ...messages }, { reasoning: false, maxTokensField: 'max_tokens' });
    const viaMessages = await claude.messages.create(messages).withResponse();
    assert.equal(viaMessages.response.headers.get('x-gateway-cache'), 'miss');
    // The stages' form of that Messages request, sent to Chat Completions for the same routed model.
    const viaChat = await t.openai.chat.completions
      .create({ ...chat, model: 'anthropic/claude-haiku-4-5' } as never)
      .withResponse();
    assert.equal(viaChat.response.headers.get('x-gateway-model'), viaMessages.response.headers.get('x-gateway-model'), 'the same routed model');
    assert.equal(viaChat.response.headers.get('x-gateway-cache'), 'miss', 'not the Messages answer');
    assert.equal((viaChat.data as unknown as { object: string }).object, 'chat.completion');
    assert.equal(gw.fake.calls.count, 2);
    const again = await claude.messages.create(messages).withResponse();
    assert.equal(again.response.headers.get('x-gateway-cache'), 'hit', 'each keeps its own');
    assert.equal(again.data.type, 'message');
  });

  test('requests that differ only in a thinking signature, in cache_control, in their beta flags or in anthropic-version do not share an entry', async () => {
    await fresh();
    const turn = (signature: string, cacheControl?: Body): Body => ({
      model: 'claude-haiku-4-5',
      max_tokens: 256,
      thinking: { type: 'enabled', budget_tokens: 128 },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'think about it', ...(cacheControl ? { cache_control: cacheControl } : {}) }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'Hmm.', signature }, { type: 'text', text: 'Done.' }] },
        { role: 'user', content: 'and now?' },
      ],
    });
    const statuses: (string | null)[] = [];
    const send = async (body: Body, headers: Record<string, string> = {}) => {
      const r = await post(body, headers);
      assert.equal(r.status, 200, r.text);
      statuses.push(r.headers.get('x-gateway-cache'));
    };
    await send(turn('sig-one'));
    await send(turn('sig-two'));
    await send(turn('sig-one', { type: 'ephemeral' }));
    await send(turn('sig-one', { type: 'ephemeral', ttl: '1h' }));
    await send(turn('sig-one'), { 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
    await send(turn('sig-one'), { 'anthropic-beta': 'interleaved-thinking-2025-05-14,context-1m-2025-08-07' });
    await send(turn('sig-one'), { 'anthropic-version': '2026-10-21' });
    assert.deepEqual(statuses, ['miss', 'miss', 'miss', 'miss', 'miss', 'miss', 'miss']);
    assert.equal(gw.fake.calls.count, 7);
    // The same request again is a hit, and the order of the beta flags does not matter; metadata and stream are not in the key.
    await send({ ...turn('sig-two'), metadata: { user_id: 'someone-else' } });
    await send(turn('sig-one'), { 'anthropic-beta': 'context-1m-2025-08-07, interleaved-thinking-2025-05-14' });
    assert.deepEqual(statuses.slice(7), ['hit', 'hit']);
    assert.equal(gw.fake.calls.count, 7);
  });

  test('the key is the request as sent: a compaction that changed it keeps its answer apart from the one sent as written', async () => {
    await fresh();
    // Whitespace compaction acts on assistant text and tool results: trailing spaces and runs of blank lines.
    const body = {
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'an answer   \n\n\n\n\nwith blank lines   ' },
        { role: 'user', content: 'second question' },
      ],
    };
    const off = await post(body, { 'x-gateway-compact': 'off' });
    assert.equal(off.headers.get('x-gateway-cache'), 'miss');
    const safe = await post(body, { 'x-gateway-compact': 'safe' });
    assert.equal(safe.headers.get('x-gateway-compaction'), 'whitespace', 'safe mode normalized the whitespace');
    assert.equal(safe.headers.get('x-gateway-cache'), 'miss', 'the provider was asked something else: not answered from the first call');
    const again = await post(body, { 'x-gateway-compact': 'safe' });
    assert.equal(again.headers.get('x-gateway-cache'), 'hit');
    assert.equal(gw.fake.calls.count, 2);
  });
});
