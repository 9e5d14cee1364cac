import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { anthropicAdapter } from '../../../src/gateway/providers/anthropic/index.ts';
import { openAiErrorJson } from '../../../src/gateway/providers/error-event.ts';
import type { CallContext } from '../../../src/gateway/providers/types.ts';

const adapter = anthropicAdapter('Anthropic', { anthropicDefaultMaxTokens: 4096 });
const ctx: CallContext = {
  model: 'claude-sonnet-4-5',
  apiKey: 'sk-ant-test',
  baseUrl: new URL('https://api.anthropic.com/v1'),
  requestId: 'req_42',
  created: 1_750_000_123,
};

/** A Messages API answer as the reference shows it, with prompt caching usage. */
const TEXT_ANSWER = {
  id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [{ type: 'text', text: 'Hi! My name is Claude.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 21, cache_creation_input_tokens: 188, cache_read_input_tokens: 1800, output_tokens: 393, service_tier: 'standard' },
};

const TOOL_ANSWER = {
  id: 'msg_01Aq9w938a90dw8q',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [
    { type: 'text', text: "I'll check the weather." },
    { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } },
    { type: 'tool_use', id: 'toolu_01B', name: 'get_time', input: {} },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: { input_tokens: 500, output_tokens: 80, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
};

const translate = (answer: object) => adapter.chatResponse(200, Buffer.from(JSON.stringify(answer)), ctx);

function problemOf(fn: () => unknown): HttpProblem {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpProblem);
    return error;
  }
  assert.fail('expected a throw');
}

describe('Anthropic response', () => {
  test('a text answer becomes a chat.completion', () => {
    assert.deepEqual(JSON.parse(translate(TEXT_ANSWER).body), {
      id: 'chatcmpl-req_42',
      object: 'chat.completion',
      created: 1_750_000_123,
      model: 'claude-sonnet-4-5-20250929',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi! My name is Claude.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 2009, completion_tokens: 393, total_tokens: 2402, prompt_tokens_details: { cached_tokens: 1800 } },
    });
  });

  test('usage: prompt = input + cache reads + cache writes; cached = reads; writes kept apart', () => {
    assert.deepEqual(translate(TEXT_ANSWER).usage, {
      promptTokens: 2009,
      cachedTokens: 1800,
      cacheWriteTokens: 188,
      completionTokens: 393,
      reasoningTokens: 0,
    });
    assert.equal(translate(TEXT_ANSWER).model, 'claude-sonnet-4-5-20250929');
  });

  test('tool_use blocks become tool_calls with JSON-string arguments; finish_reason tool_calls', () => {
    const choice = JSON.parse(translate(TOOL_ANSWER).body).choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, "I'll check the weather.");
    assert.deepEqual(choice.message.tool_calls, [
      { id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA","unit":"celsius"}' } },
      { id: 'toolu_01B', type: 'function', function: { name: 'get_time', arguments: '{}' } },
    ]);
  });

  test('tool calls without text: content null', () => {
    const answer = { ...TOOL_ANSWER, content: TOOL_ANSWER.content.slice(1) };
    assert.equal(JSON.parse(translate(answer).body).choices[0].message.content, null);
  });

  test('several text blocks are joined; thinking blocks are left out', () => {
    const answer = {
      ...TEXT_ANSWER,
      content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'text', text: 'a' }, { type: 'text', text: 'b' }],
    };
    assert.equal(JSON.parse(translate(answer).body).choices[0].message.content, 'ab');
  });

  for (const [stop, finish] of [
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['pause_turn', 'stop'],
    ['refusal', 'content_filter'],
  ]) {
    test(`stop_reason ${stop} -> finish_reason ${finish}`, () => {
      assert.equal(JSON.parse(translate({ ...TEXT_ANSWER, stop_reason: stop }).body).choices[0].finish_reason, finish);
    });
  }

  for (const garbage of ['', 'not json', '[]', '{"type":"message"}', '{"content":[1]}']) {
    test(`garbage (${JSON.stringify(garbage)}) is a 502 upstream_invalid_response`, () => {
      const problem = problemOf(() => adapter.chatResponse(200, Buffer.from(garbage), ctx));
      assert.equal(problem.status, 502);
      assert.equal(problem.code, 'upstream_invalid_response');
      assert.equal(problem.message, 'The Anthropic API sent an answer that could not be understood.');
    });
  }
});

describe('Anthropic upstream errors', () => {
  const errorBody = (type: string, message: string) =>
    Buffer.from(JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy' }));
  const cases: [number, string, string, number, string][] = [
    [400, 'invalid_request_error', 'messages: roles must alternate', 400, 'invalid_request_error'],
    [401, 'authentication_error', 'invalid x-api-key', 401, 'invalid_request_error'],
    [403, 'permission_error', 'Your API key does not have permission to use the specified resource.', 403, 'invalid_request_error'],
    [404, 'not_found_error', 'model: claude-nope', 404, 'invalid_request_error'],
    [413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.', 413, 'invalid_request_error'],
    [429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', 429, 'requests'],
    [500, 'api_error', 'Internal server error', 502, 'api_error'],
    [529, 'overloaded_error', 'Overloaded', 503, 'api_error'],
  ];
  for (const [status, anthropicType, message, mapped, openAiType] of cases) {
    test(`${status} ${anthropicType} -> ${mapped}`, () => {
      const problem = adapter.upstreamError(status, errorBody(anthropicType, message), {});
      assert.equal(problem.status, mapped);
      // The error as the client receives it, in the OpenAI shape.
      const keyRefused = status === 401 || status === 403;
      assert.deepEqual(JSON.parse(openAiErrorJson(problem)), {
        error: {
          message: keyRefused ? `The Anthropic API refused the Anthropic key stored for this tenant: ${message}` : message,
          type: openAiType,
          code:
            { 401: 'upstream_authentication_failed', 403: 'upstream_permission_denied', 500: 'upstream_error', 529: 'upstream_overloaded' }[status] ??
            anthropicType,
          param: null,
        },
      });
    });
  }

  test('429 keeps Retry-After; 529 (-> 503) keeps it too', () => {
    assert.deepEqual(adapter.upstreamError(429, errorBody('rate_limit_error', 'slow'), { 'retry-after': '12' }).headers, { 'retry-after': '12' });
    assert.deepEqual(adapter.upstreamError(529, errorBody('overloaded_error', 'Overloaded'), { 'retry-after': '3' }).headers, { 'retry-after': '3' });
    assert.deepEqual(adapter.upstreamError(400, errorBody('invalid_request_error', 'x'), { 'retry-after': '3' }).headers, {});
  });

  test('an unparseable body: "The Anthropic API answered HTTP <status>."', () => {
    const problem = adapter.upstreamError(502, Buffer.from('<html><body>Bad gateway</body></html>'), {});
    assert.equal(problem.status, 502);
    assert.equal(problem.code, 'upstream_error');
    assert.equal(problem.message, 'The Anthropic API answered HTTP 502.');
  });

  test('an error body with a 200 status is that error', () => {
    const problem = problemOf(() => adapter.chatResponse(200, errorBody('overloaded_error', 'Overloaded'), ctx));
    assert.equal(problem.status, 503);
    assert.equal(problem.code, 'upstream_overloaded');
  });
});
