import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { type DecodeOptions, decodeMessages } from '../../../../src/gateway/surfaces/messages/to-chat.ts';

const openAi: DecodeOptions = { reasoning: false, maxTokensField: 'max_tokens' };
const reasoner: DecodeOptions = { reasoning: true, maxTokensField: 'max_completion_tokens', maxOutputTokens: 100_000 };

/** Decodes JSON text, as the surface receives it, and answers the chat request as JSON text (key order included). */
function decode(body: string, options: DecodeOptions = openAi) {
  const decoded = decodeMessages(JSON.parse(body), options);
  return { ...decoded, json: JSON.stringify(decoded.chat) };
}

/** A Claude-Code-shaped request, trimmed: adaptive thinking, role "system" in messages, a deferred tool, 128000 max_tokens, cache breakpoints, streamed. */
const CLAUDE_CODE = JSON.stringify({
  model: 'claude-opus-5-5',
  max_tokens: 128000,
  system: [
    { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
    { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } },
  ],
  messages: [
    { role: 'system', content: 'Today is Monday.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: '<system-reminder>ctx</system-reminder>' },
        { type: 'text', text: 'Read a.txt and b.txt', cache_control: { type: 'ephemeral' } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Two reads.', signature: 'sig' },
        { type: 'text', text: 'Reading both.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a.txt' } },
        { type: 'tool_use', id: 'toolu_2', name: 'Read', input: { file_path: 'b.txt' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'alpha' },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'no such file' }], is_error: true },
        { type: 'text', text: 'Go on.' },
      ],
    },
  ],
  tools: [
    { name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } },
    { name: 'mcp__x__y', input_schema: { type: 'object' }, defer_loading: true, cache_control: { type: 'ephemeral' } },
    { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
  ],
  tool_choice: { type: 'auto', disable_parallel_tool_use: true },
  thinking: { type: 'adaptive' },
  output_config: { effort: 'xhigh' },
  context_management: { edits: [] },
  metadata: { user_id: 'user_abc' },
  temperature: 1,
  top_k: 5,
  stream: true,
});

describe('decodeMessages: Messages request -> Chat Completions', () => {
  test('a Claude-Code-shaped request, byte for byte', () => {
    const { json, omittedTools, uncarried } = decode(CLAUDE_CODE, reasoner);
    assert.equal(uncarried, undefined);
    assert.deepEqual(omittedTools, ['web_search']);
    assert.equal(
      json,
      JSON.stringify({
        model: 'claude-opus-5-5',
        messages: [
          { role: 'system', content: "You are Claude Code, Anthropic's official CLI for Claude.\n\nBe brief." },
          { role: 'system', content: 'Today is Monday.' },
          { role: 'user', content: '<system-reminder>ctx</system-reminder>\n\nRead a.txt and b.txt' },
          {
            role: 'assistant',
            content: 'Reading both.',
            tool_calls: [
              { id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a.txt"}' } },
              { id: 'toolu_2', type: 'function', function: { name: 'Read', arguments: '{"file_path":"b.txt"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'alpha' },
          { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: no such file' },
          { role: 'user', content: 'Go on.' },
        ],
        max_completion_tokens: 100000,
        temperature: 1,
        tools: [
          {
            type: 'function',
            function: {
              name: 'Read',
              description: 'Reads a file',
              parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
            },
          },
          { type: 'function', function: { name: 'mcp__x__y', parameters: { type: 'object' } } },
        ],
        tool_choice: 'auto',
        parallel_tool_calls: false,
        reasoning_effort: 'high',
        user: 'user_abc',
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
  });

  test('without reasoning, thinking is left out; max_tokens in max_tokens, kept when no limit is known', () => {
    const { chat } = decode(CLAUDE_CODE, openAi);
    assert.equal(chat['reasoning_effort'], undefined);
    assert.equal(chat['max_tokens'], 128000);
    assert.equal(chat['max_completion_tokens'], undefined);
  });

  test('thinking budgets map to efforts; adaptive follows output_config.effort, else medium; disabled sends none', () => {
    const effort = (thinking: unknown, outputConfig?: unknown) =>
      decodeMessages({ model: 'm', messages: [], thinking, output_config: outputConfig }, reasoner).chat['reasoning_effort'];
    assert.equal(effort({ type: 'enabled', budget_tokens: 1024 }), 'low');
    assert.equal(effort({ type: 'enabled', budget_tokens: 4000 }), 'low');
    assert.equal(effort({ type: 'enabled', budget_tokens: 10000 }), 'medium');
    assert.equal(effort({ type: 'enabled', budget_tokens: 31999 }), 'high');
    assert.equal(effort({ type: 'adaptive' }), 'medium');
    assert.equal(effort({ type: 'adaptive' }, { effort: 'low' }), 'low');
    assert.equal(effort({ type: 'adaptive' }, { effort: 'max' }), 'high');
    assert.equal(effort({ type: 'disabled' }), undefined);
    assert.equal(effort(undefined), undefined);
  });

  test('images, PDFs and text documents become content parts; other sources are uncarried', () => {
    const { json, uncarried } = decode(
      JSON.stringify({
        model: 'm',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } },
              { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' }, title: 'spec.pdf' },
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0y' } },
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
              { type: 'text', text: 'Compare them.' },
            ],
          },
        ],
      }),
    );
    assert.equal(uncarried, undefined);
    assert.equal(
      json,
      JSON.stringify({
        model: 'm',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } },
              { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
              { type: 'file', file: { filename: 'spec.pdf', file_data: 'data:application/pdf;base64,JVBERi0x' } },
              { type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBERi0y' } },
              { type: 'text', text: 'plain words' },
              { type: 'text', text: 'Compare them.' },
            ],
          },
        ],
      }),
    );
    const url = decode(
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'document', source: { type: 'url', url: 'https://e.com/a.pdf' } }] }] }),
    );
    assert.equal(url.uncarried?.status, 400);
    assert.equal(url.uncarried?.code, 'unsupported_content');
    assert.equal(url.uncarried?.param, 'messages[0].content[1].source');
    assert.match(url.uncarried?.message ?? '', /document source of type "url"/);
    const file = decode(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] }));
    assert.equal(file.uncarried?.param, 'messages[0].content[0].source');
  });

  test('images inside a tool result go in a user message right after the tool messages, ahead of the rest of the turn', () => {
    const { chat, uncarried } = decode(
      JSON.stringify({
        model: 'm',
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Screenshot', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't1',
                content: [
                  { type: 'text', text: 'taken' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/' } },
                  { type: 'text', text: '1 of 1' },
                ],
              },
              { type: 'text', text: 'What do you see?' },
            ],
          },
        ],
      }),
    );
    assert.equal(uncarried, undefined);
    assert.deepEqual(chat.messages, [
      { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'Screenshot', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'taken\n\n1 of 1' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/' } },
          { type: 'text', text: 'What do you see?' },
        ],
      },
    ]);
  });

  test('an error result with no content still says it failed; a turn of only results adds no user message', () => {
    const { chat } = decode(
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', is_error: true }] }] }),
    );
    assert.deepEqual(chat.messages, [{ role: 'tool', tool_call_id: 't', content: 'Error' }]);
  });

  test('an assistant turn of only thinking is left out; redacted thinking too', () => {
    const { chat, uncarried } = decode(
      JSON.stringify({
        model: 'm',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'xx' }, { type: 'thinking', thinking: 't', signature: 's' }] },
          { role: 'user', content: 'again' },
        ],
      }),
    );
    assert.equal(uncarried, undefined);
    assert.deepEqual(chat.messages, [
      { role: 'user', content: 'hi' },
      { role: 'user', content: 'again' },
    ]);
  });

  test('other block types are uncarried, naming the type and where; the first one wins; the rest is still decoded', () => {
    const { chat, uncarried } = decode(
      JSON.stringify({
        model: 'm',
        messages: [
          { role: 'user', content: 'find it' },
          {
            role: 'assistant',
            content: [
              { type: 'server_tool_use', id: 's1', name: 'web_search', input: { query: 'q' } },
              { type: 'web_search_tool_result', tool_use_id: 's1', content: [] },
              { type: 'text', text: 'Found.' },
            ],
          },
          { role: 'user', content: [{ type: 'search_result', source: 'x', title: 't', content: [] }] },
        ],
      }),
    );
    assert.equal(uncarried?.status, 400);
    assert.equal(uncarried?.code, 'unsupported_content');
    assert.equal(uncarried?.type, 'invalid_request_error');
    assert.equal(uncarried?.param, 'messages[1].content[0]');
    assert.match(uncarried?.message ?? '', /^messages\[1\]\.content\[0\]: content blocks of type "server_tool_use" cannot be sent to this model/);
    assert.deepEqual(chat.messages[1], { role: 'assistant', content: 'Found.' });
    const later = decode(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'container_upload', file_id: 'f' }] }] }));
    assert.equal(later.uncarried?.param, 'messages[0].content[0]');
    assert.match(later.uncarried?.message ?? '', /"container_upload"/);
  });

  test('tool_choice: any -> required, tool -> function, none; forcing an omitted tool is uncarried naming it', () => {
    const tools = [{ name: 'Read', input_schema: { type: 'object' } }, { type: 'bash_20250124', name: 'bash' }, { type: 'code_execution_20250825', name: 'code_execution' }];
    const choice = (tool_choice: unknown) => decodeMessages({ model: 'm', messages: [], tools, tool_choice }, openAi);
    assert.equal(choice({ type: 'any' }).chat['tool_choice'], 'required');
    assert.equal(choice({ type: 'none' }).chat['tool_choice'], 'none');
    assert.deepEqual(choice({ type: 'tool', name: 'Read' }).chat['tool_choice'], { type: 'function', function: { name: 'Read' } });
    assert.deepEqual(choice({ type: 'auto' }).omittedTools, ['bash', 'code_execution']);
    const forced = choice({ type: 'tool', name: 'bash' });
    assert.equal(forced.uncarried?.param, 'tool_choice');
    assert.equal(forced.uncarried?.code, 'unsupported_content');
    assert.match(forced.uncarried?.message ?? '', /forces the tool "bash"/);
    const onlyServer = decodeMessages({ model: 'm', messages: [], tools: [tools[2]], tool_choice: { type: 'any' } }, openAi);
    assert.equal(onlyServer.uncarried?.param, 'tool_choice');
    assert.equal(onlyServer.chat['tools'], undefined);
    assert.equal(onlyServer.chat['tool_choice'], undefined);
    // With every tool left out and nothing forced, the call goes on without tools.
    const unforced = decodeMessages({ model: 'm', messages: [], tools: [tools[1]], tool_choice: { type: 'auto', disable_parallel_tool_use: true } }, openAi);
    assert.equal(unforced.uncarried, undefined);
    assert.deepEqual(Object.keys(unforced.chat), ['model', 'messages']);
  });

  test('stop_sequences, top_p, structured output; Anthropic-only fields dropped; a long user_id left out', () => {
    const { json } = decode(
      JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 1024,
        messages: [{ role: 'user', content: 'json please' }],
        stop_sequences: ['END'],
        top_p: 0.9,
        service_tier: 'auto',
        container: 'c1',
        mcp_servers: [],
        cache_control: { type: 'ephemeral' },
        inference_geo: 'us',
        some_future_field: 1,
        metadata: { user_id: 'u'.repeat(65) },
        output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: {}, additionalProperties: false } } },
        stream: false,
      }),
      { ...openAi, maxOutputTokens: 64000 },
    );
    assert.equal(
      json,
      JSON.stringify({
        model: 'claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'json please' }],
        max_tokens: 1024,
        stop: ['END'],
        top_p: 0.9,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'output', schema: { type: 'object', properties: {}, additionalProperties: false }, strict: true },
        },
      }),
    );
    const beta = decodeMessages({ model: 'm', messages: [], output_format: { type: 'json_schema', schema: { type: 'object' } } }, openAi);
    assert.equal((beta.chat['response_format'] as { type: string }).type, 'json_schema');
  });

  test('shapes the Messages API refuses are named, never thrown', () => {
    assert.equal(decodeMessages({ model: 'm', messages: 'hi' }, openAi).uncarried?.param, 'messages');
    assert.equal(decodeMessages({ model: 'm', messages: [7] }, openAi).uncarried?.param, 'messages[0]');
    assert.equal(decodeMessages({ model: 'm', messages: [{ role: 'tool', content: 'x' }] }, openAi).uncarried?.param, 'messages[0].role');
    assert.equal(decodeMessages({ model: 'm', messages: [], system: [{ type: 'image' }] }, openAi).uncarried?.param, 'system[0]');
    const notObject = decodeMessages([1, 2] as unknown as Record<string, unknown>, openAi);
    assert.equal(notObject.uncarried?.code, 'invalid_request_body');
    assert.deepEqual(notObject.chat, { model: '', messages: [] });
  });

  test('a tool input nested too deeply to serialize is noted, not thrown', () => {
    let input: unknown = {};
    for (let i = 0; i < 200_000; i++) input = { a: input };
    const decoded = decodeMessages({ model: 'm', messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n', input }] }] }, openAi);
    assert.equal(decoded.uncarried?.param, 'messages[0].content[0].input');
  });

  test('never throws on any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, reasoning) => {
        const decoded = decodeMessages(value as Record<string, unknown>, { ...openAi, reasoning });
        assert.equal(typeof decoded.chat.model, 'string');
        assert.ok(Array.isArray(decoded.chat.messages));
        JSON.stringify(decoded.chat);
      }),
      { numRuns: 1000 },
    );
  });

  test('never throws on requests of random messages and blocks, and every problem is a 400 with a param (property)', () => {
    const types = ['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'search_result', 'server_tool_use', 'container_upload', 'x'];
    const anything = fc.jsonValue({ maxDepth: 2 });
    const block = fc.record(
      {
        type: fc.oneof(fc.constantFrom(...types), anything),
        text: fc.oneof(fc.string(), anything),
        id: fc.oneof(fc.string(), anything),
        name: fc.oneof(fc.string(), anything),
        input: anything,
        tool_use_id: fc.oneof(fc.string(), anything),
        is_error: fc.oneof(fc.boolean(), anything),
        source: fc.oneof(
          fc.record({ type: fc.constantFrom('base64', 'url', 'text', 'file', 'content'), media_type: fc.constantFrom('image/png', 'application/pdf', 'text/plain'), data: fc.string(), url: fc.string() }, { requiredKeys: [] }),
          anything,
        ),
        content: fc.oneof(fc.string(), fc.array(fc.oneof(fc.record({ type: fc.constantFrom(...types), text: fc.string() }), anything), { maxLength: 4 }), anything),
      },
      { requiredKeys: [] },
    );
    const message = fc.record(
      { role: fc.oneof(fc.constantFrom('user', 'assistant', 'system'), anything), content: fc.oneof(fc.string(), fc.array(fc.oneof(block, anything), { maxLength: 6 }), anything) },
      { requiredKeys: [] },
    );
    const tool = fc.oneof(
      fc.record({ name: fc.string(), input_schema: anything, type: fc.constantFrom('custom', 'web_search_20250305', 'bash_20250124') }, { requiredKeys: ['name'] }),
      anything,
    );
    const body = fc.record(
      {
        model: anything,
        max_tokens: anything,
        system: fc.oneof(fc.string(), fc.array(fc.oneof(block, anything), { maxLength: 3 }), anything),
        messages: fc.oneof(fc.array(fc.oneof(message, anything), { maxLength: 8 }), anything),
        tools: fc.oneof(fc.array(tool, { maxLength: 4 }), anything),
        tool_choice: fc.oneof(fc.record({ type: fc.constantFrom('auto', 'any', 'tool', 'none'), name: fc.string(), disable_parallel_tool_use: fc.boolean() }, { requiredKeys: ['type'] }), anything),
        thinking: fc.oneof(fc.record({ type: fc.constantFrom('enabled', 'adaptive', 'disabled'), budget_tokens: anything }), anything),
        output_config: anything,
        metadata: anything,
        stop_sequences: anything,
        stream: anything,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(body, fc.boolean(), (value, reasoning) => {
        const decoded = decodeMessages(value, { reasoning, maxTokensField: 'max_tokens', maxOutputTokens: 1000 });
        if (decoded.uncarried !== undefined) {
          assert.equal(decoded.uncarried.status, 400);
          assert.equal(typeof decoded.uncarried.param, 'string');
        }
        const max = decoded.chat['max_tokens'];
        assert.ok(max === undefined || (typeof max === 'number' && max <= 1000));
        JSON.stringify(decoded.chat);
      }),
      { numRuns: 1000 },
    );
  });
});
