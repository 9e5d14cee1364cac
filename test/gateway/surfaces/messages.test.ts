import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/**
 * Anthropic's Messages API through the gateway, with the official
 * @anthropic-ai/sdk, against the fake provider's Anthropic and OpenAI sides.
 */
describe('the Messages surface through @anthropic-ai/sdk', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  let claude: Anthropic;
  before(async () => {
    gw = await startLiveGateway('sqlite');
    t = await gw.tenant();
    claude = new Anthropic({ baseURL: gw.url, apiKey: t.apiKey, maxRetries: 0 });
  });
  after(() => gw.close());

  const lastBody = () => gw.fake.calls.last()!.body as Record<string, unknown>;

  test('create: the answer is Anthropic\'s message, with the X-Gateway-* headers, a request-id and a usage record', async () => {
    gw.fake.setBehaviour({ promptTokens: 900, cachedTokens: 300, cacheCreationTokens: 100, completionTokens: 40 }, { requests: 1 });
    const { data, response } = await claude.messages
      .create({ model: 'claude-haiku-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'hello there' }] })
      .withResponse();
    assert.equal(data.type, 'message');
    assert.equal(data.content[0]?.type, 'text');
    assert.match((data.content[0] as { text: string }).text, /hello there/);
    assert.deepEqual(
      { input: data.usage.input_tokens, read: data.usage.cache_read_input_tokens, write: data.usage.cache_creation_input_tokens, out: data.usage.output_tokens },
      { input: 900, read: 300, write: 100, out: 40 },
      "the provider's usage reaches the client as it was",
    );
    const id = response.headers.get('x-gateway-request-id')!;
    assert.equal(response.headers.get('request-id'), id);
    assert.equal(response.headers.get('x-gateway-provider'), 'anthropic');
    const sent = gw.fake.calls.last()!;
    assert.equal(sent.headers['x-api-key'], t.providerKeys['anthropic'], "the tenant's Anthropic key goes upstream, not the gateway key");
    const row = await usageRecord(gw, id);
    assert.equal(row.status, 200);
    assert.equal(row.prompt_tokens, 1300, 'input + cache reads + cache writes');
    assert.equal(row.completion_tokens, 40);
    assert.ok(row.cost_usd > 0);
  });

  test('x-api-key and Authorization: Bearer both authenticate; a wrong key is an AuthenticationError in Anthropic\'s shape', async () => {
    const bearer = new Anthropic({ baseURL: gw.url, authToken: t.apiKey, apiKey: null, maxRetries: 0 });
    const ok = await bearer.messages.create({ model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'via bearer' }] });
    assert.equal(ok.type, 'message');
    const wrong = new Anthropic({ baseURL: gw.url, apiKey: `sk-gw-${'x'.repeat(43)}`, maxRetries: 0 });
    await assert.rejects(
      wrong.messages.create({ model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => {
        assert.ok(err instanceof Anthropic.AuthenticationError);
        assert.equal((err.error as { type: string; error: { type: string } }).error.type, 'authentication_error');
        assert.ok(err.requestID, 'the request-id header is there');
        return true;
      },
    );
  });

  test('stream: the SDK\'s stream helper and final message, relayed event by event', async () => {
    gw.fake.setBehaviour({ text: 'one two three four', promptTokens: 50, completionTokens: 7 }, { requests: 1 });
    const stream = claude.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'count' }] });
    const pieces: string[] = [];
    stream.on('text', (text) => pieces.push(text));
    const final = await stream.finalMessage();
    assert.equal((final.content[0] as { text: string }).text, 'one two three four');
    assert.ok(pieces.length > 1, 'several deltas arrived');
    assert.equal(final.usage.output_tokens, 7);
    assert.equal(final.stop_reason, 'end_turn');
    const response = (await stream.withResponse()).response;
    const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
    assert.equal(row.completion_tokens, 7);
    assert.equal(row.prompt_tokens, 50);
  });

  test('lossless to Anthropic: every field the gateway does not act on arrives as the client sent it, in order, with its beta header', async () => {
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 128000,
      thinking: { type: 'adaptive' },
      system: [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      output_config: { effort: 'high' },
      tools: [
        { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } },
        { name: 'Deferred', description: 'Loaded later', input_schema: { type: 'object' }, defer_loading: true },
        { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'read it', cache_control: { type: 'ephemeral', ttl: '5m' } }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should read the file.', signature: 'EqQBCkYIBxgCKkA+sig==' },
            { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
            { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { file_path: '/tmp/a.txt' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'text', text: 'the code word is heron' }], cache_control: { type: 'ephemeral' } },
          ],
        },
      ],
      metadata: { user_id: 'user-1' },
      service_tier: 'auto',
      stop_sequences: ['\n\nHuman:'],
      tool_choice: { type: 'auto', disable_parallel_tool_use: false },
      a_field_from_the_future: { nested: [1, 2.5, 'x'] },
      stream: false,
    };
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'x-api-key': t.apiKey,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'interleaved-thinking-2025-05-14,context-management-2025-06-27',
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.json();
    const sent = gw.fake.calls.last()!;
    assert.equal(JSON.stringify(sent.body), JSON.stringify(body), 'the same JSON, key for key and in order');
    assert.equal(sent.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14,context-management-2025-06-27');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.url, '/v1/messages', 'the SDK beta marker stays at the gateway');
  });

  test('tool use round trip with parallel tool calls', async () => {
    const tools = [
      { name: 'get_weather', description: 'Weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } },
    ];
    const first = await claude.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      tools,
      messages: [{ role: 'user', content: 'please call tool get_weather' }],
    });
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use && use.type === 'tool_use');
    const second = await claude.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 64,
      tools,
      messages: [
        { role: 'user', content: 'please call tool get_weather' },
        { role: 'assistant', content: [use, { ...use, id: `${use.id}b` }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: use.id, content: 'sunny' },
            { type: 'tool_result', tool_use_id: `${use.id}b`, content: 'rainy' },
          ],
        },
      ],
    });
    assert.equal(second.type, 'message');
    const sent = lastBody();
    assert.equal((sent['messages'] as unknown[]).length, 3, 'both tool results reached the provider in one user turn');
  });

  /** A tenant of its own whose provider keys fail as `fault` says: breakers opened by its faults touch no other test's calls. */
  const failingTenant = async (fault: '429' | '529' | 'stream-error' | 'drop', extra: Record<string, unknown> = {}) => {
    const own = await gw.tenant();
    for (const key of Object.values(own.providerKeys)) gw.fake.setBehaviourFor({ apiKey: key }, { fault, ...extra });
    return { own, client: new Anthropic({ baseURL: gw.url, apiKey: own.apiKey, maxRetries: 0 }) };
  };

  test('errors raise the SDK\'s typed exceptions: unknown model (404), provider rate limit (429 with retry-after), provider overloaded, a body without messages (400)', async () => {
    await assert.rejects(
      claude.messages.create({ model: 'no-such-model', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.NotFoundError && (err.error as { error: { type: string } }).error.type === 'not_found_error',
    );
    const limited = await failingTenant('429');
    await assert.rejects(
      limited.client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.RateLimitError && err.headers?.get('retry-after') !== null,
    );
    const overloaded = await failingTenant('529');
    await assert.rejects(
      overloaded.client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof Anthropic.InternalServerError && (err.error as { error: { type: string } }).error.type === 'overloaded_error',
    );
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 16 }),
    });
    assert.equal(res.status, 400);
    const err = (await res.json()) as { type: string; error: { type: string; message: string }; request_id: string };
    assert.equal(err.type, 'error');
    assert.equal(err.error.type, 'invalid_request_error');
    assert.match(err.error.message, /messages/);
    assert.equal(res.headers.get('request-id'), err.request_id);
  });

  test('a mid-stream error reaches the SDK as an error event and the call is recorded as failed', async () => {
    // Events paced, so that the stream has opened when the error comes (before it, the gateway would retry instead).
    const { client } = await failingTenant('stream-error', { faultAfterChunks: 2, text: 'a b c d e f', chunkDelayMs: 20 });
    const stream = client.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'go' }] });
    await assert.rejects(stream.finalMessage(), (err: unknown) => err instanceof Anthropic.APIError);
    const { response } = await stream.withResponse();
    const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
    assert.notEqual(row.status, 200);
  });

  test('a dropped upstream mid-stream ends the client stream with an Anthropic error event', async () => {
    const { own } = await failingTenant('drop', { faultAfterChunks: 2, text: 'a b c d e f', chunkDelayMs: 20 });
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': own.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'go' }] }),
    });
    const text = await res.text();
    assert.match(text, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
    assert.doesNotMatch(text, /message_stop/);
  });

  test('GET /v1/models in Anthropic\'s shape (SDK models.list), and one model', async () => {
    const page = await claude.models.list({ limit: 1000 });
    const ids = page.data.map((m) => m.id);
    assert.ok(ids.includes('claude-sonnet-4-5'), 'Anthropic models by their own ids');
    assert.ok(ids.includes('openai/gpt-4o-mini'), 'others as provider/model');
    assert.equal(page.data[0]?.type, 'model');
    const one = await claude.models.retrieve('claude-sonnet-4-5');
    assert.equal(one.id, 'claude-sonnet-4-5');
    await assert.rejects(claude.models.retrieve('claude-nothing'), (err: unknown) => err instanceof Anthropic.NotFoundError);
    const openaiShape = await t.openai.models.list();
    assert.equal(openaiShape.data[0]?.object, 'model', 'without anthropic-version the list stays OpenAI\'s');
  });

  test('countTokens: counted by the gateway when the tenant has no Anthropic key', async () => {
    const openaiOnly = await gw.tenant({ providers: ['openai'] });
    const client = new Anthropic({ baseURL: gw.url, apiKey: openaiOnly.apiKey, maxRetries: 0 });
    const { data, response } = await client.messages
      .countTokens({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello world, how are you today?' }] })
      .withResponse();
    assert.ok(data.input_tokens > 5 && data.input_tokens < 40, String(data.input_tokens));
    assert.equal(response.headers.get('x-gateway-token-count'), 'estimate');
  });

  test('x-claude-code-session-id is the session id when X-Gateway-Session-Id is absent', async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', 'x-claude-code-session-id': 'cc-session-42' },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    const row = await usageRecord(gw, res.headers.get('x-gateway-request-id')!);
    assert.equal(row.session_id, 'cc-session-42');
  });

  describe('translated to an OpenAI-compatible provider', () => {
    test('create: the request arrives in Chat Completions form, the answer comes back as Anthropic\'s message', async () => {
      gw.fake.setBehaviour({ promptTokens: 120, cachedTokens: 20, completionTokens: 9 }, { requests: 1 });
      const message = await claude.messages.create({
        model: 'openai/gpt-4o-mini',
        max_tokens: 100,
        system: 'Be brief.',
        stop_sequences: ['END'],
        messages: [{ role: 'user', content: 'hello openai' }],
      });
      assert.equal(message.type, 'message');
      assert.match((message.content[0] as { text: string }).text, /hello openai/);
      assert.equal(message.stop_reason, 'end_turn');
      assert.equal(message.usage.input_tokens, 100);
      assert.equal(message.usage.cache_read_input_tokens, 20);
      const sent = lastBody();
      assert.deepEqual(sent['messages'], [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello openai' },
      ]);
      assert.deepEqual(sent['stop'], ['END']);
      assert.equal(gw.fake.calls.last()!.url, '/v1/chat/completions');
    });

    test('stream: Anthropic events synthesized from the provider\'s chunks, tool use included', async () => {
      const stream = claude.messages.stream({
        model: 'openai/gpt-4o-mini',
        max_tokens: 100,
        tools: [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
        messages: [{ role: 'user', content: 'please call tool lookup' }],
      });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, 'tool_use');
      const use = final.content.find((b) => b.type === 'tool_use');
      assert.ok(use && use.type === 'tool_use' && use.name === 'lookup');
    });

    test('a server tool is left out of the call and named in X-Gateway-Omitted-Tools; forcing it is a 400 naming it', async () => {
      const { response } = await claude.messages
        .create({
          model: 'openai/gpt-4o-mini',
          max_tokens: 50,
          tools: [{ type: 'web_search_20250305', name: 'web_search' }],
          messages: [{ role: 'user', content: 'search' }],
        })
        .withResponse();
      assert.equal(response.headers.get('x-gateway-omitted-tools'), 'web_search');
      assert.equal(lastBody()['tools'], undefined);
      await assert.rejects(
        claude.messages.create({
          model: 'openai/gpt-4o-mini',
          max_tokens: 50,
          tools: [{ type: 'web_search_20250305', name: 'web_search' }],
          tool_choice: { type: 'tool', name: 'web_search' },
          messages: [{ role: 'user', content: 'search' }],
        }),
        (err: unknown) => err instanceof Anthropic.BadRequestError && /web_search/.test(err.message),
      );
    });

    test('content the provider cannot carry is a 400 naming it, never dropped', async () => {
      await assert.rejects(
        claude.messages.create({
          model: 'openai/gpt-4o-mini',
          max_tokens: 50,
          messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }] }],
        }),
        (err: unknown) => err instanceof Anthropic.BadRequestError && /document/.test(err.message),
      );
    });
  });
  // A 1x1 PNG.
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  const withImage = (model: string) => ({
    model,
    max_tokens: 32,
    messages: [
      {
        role: 'user' as const,
        content: [
          { type: 'image' as const, source: { type: 'base64' as const, media_type: 'image/png' as const, data: PNG } },
          { type: 'text' as const, text: 'what is in this picture?' },
        ],
      },
    ],
  });

  test('an image reaches Anthropic as the client sent it, and an OpenAI model as an image_url part', async () => {
    await claude.messages.create(withImage('claude-haiku-4-5'));
    const toAnthropic = gw.fake.calls.last()!.body as { messages: { content: { type: string; source?: { data: string } }[] }[] };
    assert.equal(toAnthropic.messages[0]!.content[0]!.source!.data, PNG);
    await claude.messages.create(withImage('openai/gpt-4o-mini'));
    const toOpenAi = gw.fake.calls.last()!.body as { messages: { content: { type: string; image_url?: { url: string } }[] }[] };
    assert.deepEqual(toOpenAi.messages[0]!.content[0], { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } });
  });

  test('countTokens for an Anthropic model is asked of the tenant\'s Anthropic provider, with its key', async () => {
    const { data, response } = await claude.messages
      .countTokens({ model: 'claude-sonnet-4-5', system: 'Be brief.', messages: [{ role: 'user', content: 'count these tokens please' }] })
      .withResponse();
    assert.equal(response.headers.get('x-gateway-token-count'), 'anthropic');
    assert.ok(data.input_tokens > 0);
    const sent = gw.fake.calls.last()!;
    assert.match(sent.url, /^\/v1\/messages\/count_tokens/);
    assert.equal(sent.headers['x-api-key'], t.providerKeys['anthropic']);
    assert.equal((sent.body as { system: string }).system, 'Be brief.', 'the body as the client sent it');
  });
  test('model auto is routed, and the answer comes back in Anthropic\'s shape whoever answers', async () => {
    const t = await gw.tenant();
    const claude = new Anthropic({ baseURL: gw.url, apiKey: t.apiKey, maxRetries: 0 });
    const { data, response } = await claude.messages.create({ model: 'auto', max_tokens: 64, messages: [{ role: 'user', content: 'say hi' }] }).withResponse();
    assert.equal(data.type, 'message');
    assert.ok(response.headers.get('x-gateway-route-reason'), 'routing chose the model');
    assert.match(response.headers.get('x-gateway-model') ?? '', /^(openai|anthropic)\//);
  });

  test('a fallback from Anthropic to an OpenAI model mid-call: the request translated for it, the answer still Anthropic\'s', async () => {
    const t = await gw.tenant();
    const set = await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { routing: { fallbacks: { 'anthropic/claude-haiku-4-5': ['openai/gpt-4o-mini'] } } } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    gw.fake.setBehaviourFor({ apiKey: t.providerKeys['anthropic']! }, { fault: '500' });
    const claude = new Anthropic({ baseURL: gw.url, apiKey: t.apiKey, maxRetries: 0 });
    const { data, response } = await claude.messages
      .create({ model: 'claude-haiku-4-5', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'fall back please' }] })
      .withResponse();
    assert.equal(data.type, 'message');
    assert.match((data.content[0] as { text: string }).text, /fall back please/);
    assert.equal(response.headers.get('x-gateway-provider'), 'openai');
    assert.match(response.headers.get('x-gateway-route-reason') ?? '', /fallback from anthropic\/claude-haiku-4-5/);
    const sent = gw.fake.calls.last()!;
    assert.equal(sent.url, '/v1/chat/completions');
    assert.deepEqual((sent.body as { messages: unknown[] }).messages[0], { role: 'system', content: 'Be brief.' });
  });
});

describe('Claude Code model names and aliases on the Messages surface', () => {
  let gw: LiveGateway;
  before(async () => {
    gw = await startLiveGateway('sqlite');
  });
  after(() => gw.close());

  /** A Claude-Code-shaped turn: a system prompt with a 1h breakpoint, tools (one deferred, one server tool), a tool-use history with signed thinking, beta headers. */
  const claudeCodeTurn = (model: string) => ({
    model,
    max_tokens: 32000,
    stream: true,
    thinking: { type: 'adaptive' },
    system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    tools: [
      { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } },
      { name: 'Grep', description: 'Search', input_schema: { type: 'object', properties: { pattern: { type: 'string' } } }, defer_loading: true },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
    ],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'what does notes.txt say?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Read it.', signature: 'c2lnbmVk' },
          { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: '/w/notes.txt' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'the code word is heron', cache_control: { type: 'ephemeral' } }] },
    ],
  });

  const post = (apiKey: string, body: unknown) =>
    fetch(`${gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'x-api-key': apiKey,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
        'content-type': 'application/json',
        'x-claude-code-session-id': 'cc-1',
      },
      body: JSON.stringify(body),
    });

  test('an unknown claude-* name (Claude Code 2.1 default) goes to the tenant\'s Anthropic provider as written, lossless', async () => {
    const t = await gw.tenant();
    const body = claudeCodeTurn('claude-opus-5-5');
    const res = await post(t.apiKey, body);
    assert.equal(res.status, 200);
    const events = await res.text();
    assert.match(events, /event: message_stop/);
    const sent = gw.fake.calls.last()!;
    assert.equal(JSON.stringify(sent.body), JSON.stringify(body));
    assert.equal(res.headers.get('x-gateway-model'), 'anthropic/claude-opus-5-5');
  });

  test('the same session through an alias (claude-* to an OpenAI model): translated, the server tool named as left out, the answer in Anthropic events', async () => {
    const t = await gw.tenant();
    const set = await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { models: { aliases: { 'claude-*': 'openai/gpt-4o-mini' } } } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const res = await post(t.apiKey, claudeCodeTurn('claude-sonnet-4-5-20250929'));
    assert.equal(res.status, 200);
    const events = await res.text();
    assert.match(events, /^event: message_start\n/);
    assert.match(events, /event: message_stop/);
    assert.equal(res.headers.get('x-gateway-provider'), 'openai');
    assert.equal(res.headers.get('x-gateway-omitted-tools'), 'web_search');
    assert.match(res.headers.get('x-gateway-route-reason') ?? '', /^alias claude-\* -> openai\/gpt-4o-mini/);
    const sent = gw.fake.calls.last()!;
    assert.equal(sent.url, '/v1/chat/completions');
    assert.equal(sent.headers['anthropic-beta'], undefined, 'beta flags are not sent to a provider that cannot take them');
    const body = sent.body as { model: string; messages: { role: string; content: unknown; tool_call_id?: string }[]; tools: { function: { name: string } }[] };
    assert.equal(body.model, 'gpt-4o-mini');
    assert.equal((body as unknown as { max_completion_tokens: number }).max_completion_tokens, 16_384, "Claude Code's 32,000 lowered to the model's documented output limit");
    assert.deepEqual(body.tools.map((x) => x.function.name), ['Read', 'Grep']);
    assert.deepEqual(body.messages.map((m) => m.role), ['system', 'user', 'assistant', 'tool']);
    assert.equal(body.messages[3]!.tool_call_id, 'toolu_1');
    const row = await usageRecord(gw, res.headers.get('x-gateway-request-id')!);
    assert.equal(row.surface, 'messages');
    assert.equal(row.model_requested, 'claude-sonnet-4-5-20250929');
    assert.equal(row.model_used, 'openai/gpt-4o-mini');
    assert.equal(row.session_id, 'cc-1');
    // count_tokens follows the alias: counted for the model the call would go to, not asked of Anthropic.
    const count = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(count.headers.get('x-gateway-token-count'), 'estimate');
  });
});
