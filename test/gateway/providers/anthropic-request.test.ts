import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { anthropicAdapter } from '../../../src/gateway/providers/anthropic/index.ts';
import type { CallContext, ChatRequest } from '../../../src/gateway/providers/types.ts';

const adapter = anthropicAdapter('Anthropic', { anthropicDefaultMaxTokens: 4096 });
const ctx: CallContext = {
  model: 'claude-sonnet-4-5',
  apiKey: 'sk-ant-test',
  baseUrl: new URL('https://api.anthropic.com/v1'),
  requestId: 'req_1',
  created: 1_750_000_000,
};

/** The JSON body sent to Anthropic for `fields` added to a minimal request. */
// biome-ignore lint/suspicious/noExplicitAny: the sent body is inspected field by field
function body(fields: Record<string, unknown>): Record<string, any> {
  const request: ChatRequest = { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hi' }], ...fields };
  return JSON.parse(adapter.chatRequest(request, ctx).body);
}

function refusal(fields: Record<string, unknown>): HttpProblem {
  try {
    body(fields);
  } catch (error) {
    assert.ok(error instanceof HttpProblem);
    assert.equal(error.status, 400);
    return error;
  }
  assert.fail('expected a 400');
}

describe('Anthropic request: transport', () => {
  test('POST path is the base path plus /messages', () => {
    const request: ChatRequest = { model: 'x', messages: [{ role: 'user', content: 'Hi' }] };
    assert.equal(adapter.chatRequest(request, ctx).path, '/v1/messages');
    assert.equal(adapter.chatRequest(request, { ...ctx, baseUrl: new URL('https://proxy.example/anthropic/') }).path, '/anthropic/messages');
  });

  test('the key is sent as x-api-key with anthropic-version 2023-06-01, never as Authorization', () => {
    const request: ChatRequest = { model: 'x', messages: [{ role: 'user', content: 'Hi' }] };
    assert.deepEqual(adapter.chatRequest(request, ctx).headers, {
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    });
  });

  test('model is the provider id', () => {
    assert.equal(body({}).model, 'claude-sonnet-4-5');
  });

  test('a minimal request', () => {
    assert.deepEqual(body({}), { model: 'claude-sonnet-4-5', max_tokens: 4096, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] });
  });
});

describe('Anthropic request: parameters', () => {
  test('max_tokens defaults to the configured value when absent', () => {
    assert.equal(body({}).max_tokens, 4096);
    assert.equal(JSON.parse(anthropicAdapter('Anthropic', { anthropicDefaultMaxTokens: 1000 }).chatRequest({ model: 'x', messages: [] }, ctx).body).max_tokens, 1000);
  });

  test('max_tokens is passed; max_completion_tokens wins over it', () => {
    assert.equal(body({ max_tokens: 300 }).max_tokens, 300);
    assert.equal(body({ max_tokens: 300, max_completion_tokens: 200 }).max_tokens, 200);
    assert.equal(body({ max_tokens: null }).max_tokens, 4096);
  });

  test('a max_tokens that is not a positive integer is a 400 naming it', () => {
    assert.equal(refusal({ max_tokens: 0 }).param, 'max_tokens');
    assert.equal(refusal({ max_completion_tokens: 'ten' }).param, 'max_completion_tokens');
  });

  test('stop (a string or a list) becomes stop_sequences', () => {
    assert.deepEqual(body({ stop: 'END' }).stop_sequences, ['END']);
    assert.deepEqual(body({ stop: ['a', 'b'] }).stop_sequences, ['a', 'b']);
    assert.equal(body({ stop: null }).stop_sequences, undefined);
  });

  test('temperature and top_p pass as they are', () => {
    const sent = body({ temperature: 0.3, top_p: 0.9 });
    assert.equal(sent.temperature, 0.3);
    assert.equal(sent.top_p, 0.9);
  });

  test('user becomes metadata.user_id', () => {
    assert.deepEqual(body({ user: 'user-123' }).metadata, { user_id: 'user-123' });
    assert.deepEqual(body({ safety_identifier: 'hash-9' }).metadata, { user_id: 'hash-9' });
  });

  test('stream is passed; stream_options is not', () => {
    const sent = body({ stream: true, stream_options: { include_usage: true } });
    assert.equal(sent.stream, true);
    assert.equal(sent.stream_options, undefined);
  });

  test('OpenAI-only fields are dropped', () => {
    const sent = body({
      frequency_penalty: 0.5,
      presence_penalty: 0.1,
      logprobs: true,
      top_logprobs: 2,
      seed: 7,
      logit_bias: { '50256': -100 },
      store: true,
      service_tier: 'auto',
      modalities: ['text'],
      prediction: { type: 'content', content: 'x' },
      reasoning_effort: 'high',
      metadata: { a: 'b' },
      n: 1,
      response_format: { type: 'text' },
      parallel_tool_calls: true,
      prompt_cache_key: 'k',
      verbosity: 'low',
    });
    assert.deepEqual(Object.keys(sent).sort(), ['max_tokens', 'messages', 'model']);
  });

  test('n above 1 is a 400 unsupported_parameter', () => {
    const problem = refusal({ n: 2 });
    assert.equal(problem.code, 'unsupported_parameter');
    assert.equal(problem.param, 'n');
  });

  test('response_format json_schema and json_object are a 400 unsupported_parameter', () => {
    const schema = refusal({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } });
    assert.equal(schema.code, 'unsupported_parameter');
    assert.equal(schema.param, 'response_format');
    assert.match(schema.message, /json_schema" is not supported for Anthropic models/);
    assert.equal(refusal({ response_format: { type: 'json_object' } }).param, 'response_format');
  });
});

describe('Anthropic request: messages', () => {
  test('system messages go to the top-level system, in order', () => {
    const sent = body({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'system', content: [{ type: 'text', text: 'Answer in French.' }] },
      ],
    });
    assert.deepEqual(sent.system, [
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Answer in French.' },
    ]);
    assert.deepEqual(sent.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
  });

  test('the developer role is treated as system', () => {
    assert.deepEqual(body({ messages: [{ role: 'developer', content: 'Rules.' }, { role: 'user', content: 'Hi' }] }).system, [{ type: 'text', text: 'Rules.' }]);
  });

  test('no system message: no system field', () => {
    assert.equal(body({}).system, undefined);
  });

  test('a system message with an image is a 400', () => {
    const problem = refusal({ messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://x.example/a.png' } }] }] });
    assert.equal(problem.param, 'messages[0].content');
  });

  test('multi-turn text keeps roles and order', () => {
    const sent = body({
      messages: [
        { role: 'user', content: 'What is 2+2?' },
        { role: 'assistant', content: '4.' },
        { role: 'user', content: [{ type: 'text', text: 'And 3+3?' }] },
      ],
    });
    assert.deepEqual(sent.messages, [
      { role: 'user', content: [{ type: 'text', text: 'What is 2+2?' }] },
      { role: 'assistant', content: [{ type: 'text', text: '4.' }] },
      { role: 'user', content: [{ type: 'text', text: 'And 3+3?' }] },
    ]);
  });

  test('consecutive same-role messages are merged', () => {
    const sent = body({
      messages: [
        { role: 'user', content: 'One.' },
        { role: 'user', content: 'Two.' },
        { role: 'assistant', content: 'A' },
        { role: 'assistant', content: 'B' },
      ],
    });
    assert.deepEqual(sent.messages, [
      { role: 'user', content: [{ type: 'text', text: 'One.' }, { type: 'text', text: 'Two.' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'A' }, { type: 'text', text: 'B' }] },
    ]);
  });

  test('a system message between two user messages does not split them', () => {
    const sent = body({ messages: [{ role: 'user', content: 'a' }, { role: 'system', content: 's' }, { role: 'user', content: 'b' }] });
    assert.equal(sent.messages.length, 1);
  });

  test('empty text is left out (Anthropic refuses empty text blocks)', () => {
    const sent = body({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: '' }, { role: 'user', content: [{ type: 'text', text: '' }, { type: 'text', text: 'x' }] }] });
    assert.deepEqual(sent.messages, [{ role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'text', text: 'x' }] }]);
  });

  test('an assistant refusal part is sent as text', () => {
    const sent = body({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] }] });
    assert.deepEqual(sent.messages[1].content, [{ type: 'text', text: 'I cannot.' }]);
  });

  test('cache_control on a part is carried over', () => {
    const sent = body({ messages: [{ role: 'user', content: [{ type: 'text', text: 'long doc', cache_control: { type: 'ephemeral' } }] }] });
    assert.deepEqual(sent.messages[0].content, [{ type: 'text', text: 'long doc', cache_control: { type: 'ephemeral' } }]);
  });

  test('an unknown role is a 400 naming it', () => {
    assert.equal(refusal({ messages: [{ role: 'function', name: 'f', content: 'x' }] }).param, 'messages[0].role');
    assert.equal(refusal({ messages: ['hello'] }).param, 'messages[0]');
  });
});

describe('Anthropic request: images and files', () => {
  test('an image_url data URL becomes a base64 image block', () => {
    const sent = body({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } }] }],
    });
    assert.deepEqual(sent.messages[0].content[1], { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } });
  });

  test('an https image_url becomes a url image block', () => {
    const sent = body({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://upload.wikimedia.org/a.jpg' } }] }] });
    assert.deepEqual(sent.messages[0].content[0], { type: 'image', source: { type: 'url', url: 'https://upload.wikimedia.org/a.jpg' } });
  });

  test('http and non-base64 data URLs are a 400 naming the part', () => {
    assert.equal(refusal({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x.example/a.png' } }] }] }).param, 'messages[0].content[0].image_url.url');
    assert.equal(refusal({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png,abc' } }] }] }).param, 'messages[0].content[0].image_url.url');
  });

  test('a PDF file part becomes a document block; audio is a 400', () => {
    const sent = body({ messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } }] }] });
    assert.deepEqual(sent.messages[0].content[0], { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } });
    assert.equal(refusal({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }).param, 'messages[0].content[0].type');
  });
});

describe('Anthropic request: tools', () => {
  const weather = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather in a given location',
      parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
      strict: true,
    },
  };

  test('tools become Anthropic tools with input_schema', () => {
    assert.deepEqual(body({ tools: [weather, { type: 'function', function: { name: 'now' } }] }).tools, [
      {
        name: 'get_weather',
        description: 'Get the current weather in a given location',
        input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
      },
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  test('a non-function tool is a 400', () => {
    assert.equal(refusal({ tools: [{ type: 'web_search_preview' }] }).param, 'tools[0]');
  });

  test('tool_choice auto -> auto', () => {
    assert.deepEqual(body({ tools: [weather], tool_choice: 'auto' }).tool_choice, { type: 'auto' });
  });

  test('tool_choice required -> any', () => {
    assert.deepEqual(body({ tools: [weather], tool_choice: 'required' }).tool_choice, { type: 'any' });
  });

  test('tool_choice none -> none', () => {
    assert.deepEqual(body({ tools: [weather], tool_choice: 'none' }).tool_choice, { type: 'none' });
  });

  test('a named tool_choice -> tool with its name', () => {
    assert.deepEqual(body({ tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather' } } }).tool_choice, {
      type: 'tool',
      name: 'get_weather',
    });
  });

  test('an invalid tool_choice is a 400', () => {
    assert.equal(refusal({ tools: [weather], tool_choice: 'always' }).param, 'tool_choice');
  });

  test('parallel_tool_calls false -> disable_parallel_tool_use', () => {
    assert.deepEqual(body({ tools: [weather], parallel_tool_calls: false }).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
    assert.deepEqual(body({ tools: [weather], tool_choice: 'required', parallel_tool_calls: false }).tool_choice, {
      type: 'any',
      disable_parallel_tool_use: true,
    });
  });

  test('no tools: no tool_choice sent', () => {
    assert.equal(body({ tool_choice: 'none' }).tool_choice, undefined);
  });

  test('assistant tool_calls become tool_use blocks with parsed input; tool messages become tool_result blocks in the next user turn', () => {
    const sent = body({
      tools: [weather],
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            { id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
            { id: 'toolu_02', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_01', content: '18°C, cloudy' },
        { role: 'tool', tool_call_id: 'toolu_02', content: [{ type: 'text', text: '24°C, sunny' }] },
        { role: 'user', content: 'Thanks, which is warmer?' },
      ],
    });
    assert.deepEqual(sent.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { location: 'Paris' } },
          { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { location: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: '18°C, cloudy' },
          { type: 'tool_result', tool_use_id: 'toolu_02', content: [{ type: 'text', text: '24°C, sunny' }] },
          { type: 'text', text: 'Thanks, which is warmer?' },
        ],
      },
    ]);
  });

  test('an assistant message with only tool_calls (content null) and empty arguments', () => {
    const sent = body({
      messages: [
        { role: 'user', content: 'Time?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_03', type: 'function', function: { name: 'now', arguments: '' } }] },
        { role: 'tool', tool_call_id: 'toolu_03', content: '' },
      ],
    });
    assert.deepEqual(sent.messages.slice(1), [
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_03', name: 'now', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_03' }] },
    ]);
  });

  test('tool results come before text in a user turn, whatever the message order', () => {
    const sent = body({
      messages: [
        { role: 'user', content: 'Go.' },
        { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'now', arguments: '{}' } }] },
        { role: 'user', content: 'Also this.' },
        { role: 'tool', tool_call_id: 't1', content: 'noon' },
      ],
    });
    assert.deepEqual(sent.messages[2].content, [
      { type: 'tool_result', tool_use_id: 't1', content: 'noon' },
      { type: 'text', text: 'Also this.' },
    ]);
  });

  test('tool_call arguments that are not a JSON object are a 400 naming them', () => {
    for (const args of ['{"location":', '[1]', '"x"']) {
      const problem = refusal({
        messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: args } }] }],
      });
      assert.equal(problem.param, 'messages[0].tool_calls[0].function.arguments');
    }
  });

  test('a tool message without tool_call_id is a 400', () => {
    assert.equal(refusal({ messages: [{ role: 'tool', content: 'x' }] }).param, 'messages[0].tool_call_id');
  });
});

describe('Anthropic request: sizes a client chooses', () => {
  // push(...blocks) passed every block as an argument: 200,000 content parts overflowed the stack, and the RangeError
  // was answered as an unreachable upstream (502, counted against the provider's breaker).
  test('hundreds of thousands of content parts, system parts and tool results are translated', () => {
    const parts = Array.from({ length: 300_000 }, (_, i) => ({ type: 'text', text: `p${i}` }));
    const sent = body({
      messages: [
        { role: 'system', content: parts },
        { role: 'user', content: 'first' },
        { role: 'user', content: parts },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: parts },
        { role: 'user', content: parts },
      ],
    });
    assert.equal(sent['system'].length, 300_000);
    assert.equal(sent['messages'][0].content.length, 300_001, 'the two user turns merged');
    const last = sent['messages'].at(-1).content;
    assert.equal(last.length, 300_001);
    assert.equal(last[0].type, 'tool_result', 'tool results first');
  });
});
