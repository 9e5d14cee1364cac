import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HttpProblem } from '../../../../src/platform/errors.ts';
import { anthropicErrorBody, anthropicType as anthropicErrorType } from '../../../../src/platform/error-format.ts';
import { anthropicUsageFromOpenAi, messageFromChat } from '../../../../src/gateway/surfaces/messages/from-chat.ts';

const options = { provider: 'OpenAI', requestId: 'req1' };

/** An OpenAI chat.completion with parallel tool calls, as the API sends it. */
const TOOL_CALLS = JSON.stringify({
  id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
  object: 'chat.completion',
  created: 1741569952,
  model: 'gpt-4.1-2025-04-14',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Reading both.',
        refusal: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a.txt"}' } },
          { id: 'call_b', type: 'function', function: { name: 'Read', arguments: '{"file_path":"b.txt"}' } },
        ],
        annotations: [],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    },
  ],
  usage: {
    prompt_tokens: 1200,
    completion_tokens: 40,
    total_tokens: 1240,
    prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  },
  service_tier: 'default',
});

describe('messageFromChat: chat.completion -> Anthropic message', () => {
  test('text and parallel tool calls, byte for byte', () => {
    assert.equal(
      messageFromChat(TOOL_CALLS, options),
      JSON.stringify({
        id: 'msg_req1',
        type: 'message',
        role: 'assistant',
        model: 'gpt-4.1-2025-04-14',
        content: [
          { type: 'text', text: 'Reading both.' },
          { type: 'tool_use', id: 'call_a', name: 'Read', input: { file_path: 'a.txt' } },
          { type: 'tool_use', id: 'call_b', name: 'Read', input: { file_path: 'b.txt' } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 176, cache_creation_input_tokens: 0, cache_read_input_tokens: 1024, output_tokens: 40 },
      }),
    );
  });

  test('reasoning_content becomes a thinking block first; the id derives from the completion when no request id is given', () => {
    const completion = JSON.stringify({
      id: 'chatcmpl-xyz',
      object: 'chat.completion',
      model: 'deepseek-reasoner',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Four.', reasoning_content: '2+2=4' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_cache_hit_tokens: 4 },
    });
    const message = JSON.parse(messageFromChat(completion, { provider: 'DeepSeek' }));
    assert.equal(message.id, 'msg_xyz');
    assert.deepEqual(message.content, [
      { type: 'thinking', thinking: '2+2=4', signature: '' },
      { type: 'text', text: 'Four.' },
    ]);
    assert.equal(message.stop_reason, 'end_turn');
    assert.deepEqual(message.usage, { input_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 4, output_tokens: 5 });
  });

  test('finish reasons map to stop reasons; tool calls under "stop" are still tool_use', () => {
    const reason = (finish_reason: unknown, tool_calls?: unknown[]) =>
      JSON.parse(messageFromChat(JSON.stringify({ id: 'c', model: 'm', choices: [{ message: { content: 'x', tool_calls }, finish_reason }] }), options))
        .stop_reason;
    assert.equal(reason('stop'), 'end_turn');
    assert.equal(reason('length'), 'max_tokens');
    assert.equal(reason('tool_calls', [{ id: 'c1', function: { name: 'f', arguments: '{}' } }]), 'tool_use');
    assert.equal(reason('function_call'), 'tool_use');
    assert.equal(reason('content_filter'), 'refusal');
    assert.equal(reason(null), 'end_turn');
    assert.equal(reason('stop', [{ id: 'c1', function: { name: 'f', arguments: '{}' } }]), 'tool_use');
  });

  test('arguments that are not a JSON object become {}; a refusal is the text; no usage is all zero', () => {
    const message = JSON.parse(
      messageFromChat(
        JSON.stringify({
          id: 'c',
          model: 'm',
          choices: [
            {
              message: {
                content: null,
                refusal: "I can't help with that.",
                tool_calls: [
                  { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":' } },
                  { id: 'c2', type: 'function', function: { name: 'g', arguments: '[1]' } },
                  { id: 'c3', type: 'function', function: { name: 'h', arguments: '' } },
                ],
              },
              finish_reason: 'tool_calls',
            },
          ],
        }),
        options,
      ),
    );
    assert.deepEqual(
      message.content.map((b: { input?: unknown; text?: string }) => b.input ?? b.text),
      ["I can't help with that.", {}, {}, {}],
    );
    assert.deepEqual(message.usage, { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 });
  });

  test('JSON that is not a completion is a 502 upstream_invalid_response', () => {
    for (const body of ['nope', '[]', '{}', '{"choices":[]}', '{"choices":[{"message":"x"}]}', '{"error":{"message":"boom"}}']) {
      assert.throws(
        () => messageFromChat(body, options),
        (err: unknown) => err instanceof HttpProblem && err.status === 502 && err.code === 'upstream_invalid_response',
        body,
      );
    }
  });

  test('usage mapping for reuse: cached tokens come out of input_tokens', () => {
    assert.deepEqual(anthropicUsageFromOpenAi({ prompt_tokens: 100, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 64 } }), {
      input_tokens: 36,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 64,
      output_tokens: 7,
    });
    assert.deepEqual(anthropicUsageFromOpenAi(undefined).input_tokens, 0);
  });
});

describe('Anthropic error types by status', () => {
  test('each status the SDK maps to an exception class gets its type', () => {
    const table: [number, string][] = [
      [400, 'invalid_request_error'],
      [401, 'authentication_error'],
      [402, 'billing_error'],
      [403, 'permission_error'],
      [404, 'not_found_error'],
      [413, 'request_too_large'],
      [422, 'invalid_request_error'],
      [429, 'rate_limit_error'],
      [500, 'api_error'],
      [502, 'api_error'],
      [503, 'overloaded_error'],
      [504, 'timeout_error'],
      [529, 'overloaded_error'],
    ];
    for (const [status, type] of table) assert.equal(anthropicErrorType(status), type, String(status));
    assert.deepEqual(anthropicErrorBody(new HttpProblem(429, 'rate_limited', 'Slow down.')), {
      type: 'error',
      error: { type: 'rate_limit_error', message: 'Slow down.' },
    });
  });
});
