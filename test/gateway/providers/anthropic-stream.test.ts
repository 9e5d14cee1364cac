import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { anthropicAdapter } from '../../../src/gateway/providers/anthropic/index.ts';
import type { CallContext, StreamOptions } from '../../../src/gateway/providers/types.ts';
import { cut, run } from '../../helpers/byte-cuts.ts';

const adapter = anthropicAdapter('Anthropic', { anthropicDefaultMaxTokens: 4096 });
const ctx: CallContext = {
  model: 'claude-sonnet-4-5',
  apiKey: 'sk-ant-test',
  baseUrl: new URL('https://api.anthropic.com/v1'),
  requestId: 'req_7',
  created: 1_750_000_000,
};

const sse = (events: [string, object][]) => events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');

/** A streamed tool-use answer shaped as in the Messages streaming reference (text, then a tool_use block, ping included). */
const TOOL_STREAM: [string, object][] = [
  ['message_start', { type: 'message_start', message: { id: 'msg_014p7gG3wDgGV9EUtLvnow3U', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', stop_sequence: null, usage: { input_tokens: 472, output_tokens: 2, cache_creation_input_tokens: 10, cache_read_input_tokens: 100 }, content: [], stop_reason: null } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['ping', { type: 'ping' }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Okay, let’s check ' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'the weather 🌦 for "SF":' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} } }],
  ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"location":' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: ' "San Francisco, CA"}' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 1 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89 } }],
  ['message_stop', { type: 'message_stop' }],
];
const RECORDED = Buffer.from(sse(TOOL_STREAM));
const USAGE = { promptTokens: 582, cachedTokens: 100, cacheWriteTokens: 10, completionTokens: 89, reasoningTokens: 0 };

const noUsage: StreamOptions = { includeUsage: false, cost: () => 0.25 };
const withUsage: StreamOptions = { includeUsage: true, cost: (u) => u.completionTokens / 1000 };

const head = '{"id":"chatcmpl-req_7","object":"chat.completion.chunk","created":1750000000,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":';
const chunk = (delta: object, finish: string | null = null) => `data: ${head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
const EXPECTED_CHUNKS = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Okay, let’s check ' }),
  chunk({ content: 'the weather 🌦 for "SF":' }),
  chunk({ tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"location":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: ' "San Francisco, CA"}' } }] }),
  chunk({}, 'tool_calls'),
].join('');

describe('Anthropic stream', () => {
  test('events become chat.completion.chunk deltas: role, text, tool call start and arguments, finish_reason, [DONE]', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    assert.equal(run(stream, [RECORDED]), `${EXPECTED_CHUNKS}data: [DONE]\n\n`);
    assert.deepEqual(stream.usage, USAGE);
    assert.equal(stream.model, 'claude-sonnet-4-5-20250929');
    assert.equal(stream.error, undefined);
  });

  test('each chunk is valid JSON of the OpenAI chunk shape', () => {
    const out = run(adapter.chatStream(ctx, withUsage), [RECORDED]);
    const events = out.split('\n\n').filter((e) => e !== '').map((e) => e.slice('data: '.length));
    assert.equal(events.pop(), '[DONE]');
    for (const event of events) assert.equal(JSON.parse(event).object, 'chat.completion.chunk');
  });

  test('with stream_options.include_usage: a usage chunk (empty choices, with cost) before [DONE]', () => {
    const out = run(adapter.chatStream(ctx, withUsage), [RECORDED]);
    const usageChunk = {
      id: 'chatcmpl-req_7',
      object: 'chat.completion.chunk',
      created: 1_750_000_000,
      model: 'claude-sonnet-4-5-20250929',
      choices: [],
      usage: { prompt_tokens: 582, completion_tokens: 89, total_tokens: 671, prompt_tokens_details: { cached_tokens: 100 }, cost: 0.089 },
    };
    assert.equal(out, `${EXPECTED_CHUNKS}data: ${JSON.stringify(usageChunk)}\n\ndata: [DONE]\n\n`);
  });

  test('no cost known: the usage chunk has no cost field', () => {
    const out = run(adapter.chatStream(ctx, { includeUsage: true, cost: () => undefined }), [RECORDED]);
    assert.match(out, /"usage":\{"prompt_tokens":582,"completion_tokens":89,"total_tokens":671,"prompt_tokens_details":\{"cached_tokens":100\}\}\}/);
  });

  test('every byte boundary and any chunking give the same output (property)', () => {
    for (const options of [noUsage, withUsage]) {
      const whole = run(adapter.chatStream(ctx, options), [RECORDED]);
      for (let i = 1; i < RECORDED.length; i++) {
        const stream = adapter.chatStream(ctx, options);
        assert.equal(run(stream, cut(RECORDED, [i])), whole, `cut at ${i}`);
        assert.deepEqual(stream.usage, USAGE);
      }
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 1, max: RECORDED.length - 1 }), { maxLength: 80 }), (offsets) => {
          const stream = adapter.chatStream(ctx, options);
          assert.equal(run(stream, cut(RECORDED, offsets)), whole);
          assert.deepEqual(stream.usage, USAGE);
        }),
        { numRuns: 300 },
      );
    }
  });

  test('final input counts in message_delta (newer models) replace those of message_start', () => {
    const events = TOOL_STREAM.map(([name, data]): [string, object] =>
      name === 'message_delta'
        ? [name, { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { input_tokens: 480, cache_read_input_tokens: null, output_tokens: 90 } }]
        : [name, data],
    );
    const stream = adapter.chatStream(ctx, noUsage);
    const out = run(stream, [Buffer.from(sse(events))]);
    assert.deepEqual(stream.usage, { promptTokens: 590, cachedTokens: 100, cacheWriteTokens: 10, completionTokens: 90, reasoningTokens: 0 });
    assert.ok(out.includes('"finish_reason":"stop"'));
  });

  for (const [stop, finish] of [['end_turn', 'stop'], ['max_tokens', 'length'], ['stop_sequence', 'stop']]) {
    test(`stop_reason ${stop} -> finish_reason ${finish}`, () => {
      const events: [string, object][] = [
        TOOL_STREAM[0]!,
        ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } }],
        ['message_stop', { type: 'message_stop' }],
      ];
      assert.ok(run(adapter.chatStream(ctx, noUsage), [Buffer.from(sse(events))]).includes(`"finish_reason":"${finish}"`));
    });
  }

  test('thinking deltas and unknown events are skipped', () => {
    const events: [string, object][] = [
      TOOL_STREAM[0]!,
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me think' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQB' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['future_event', { type: 'future_event', x: 1 }],
      ...TOOL_STREAM.slice(11),
    ];
    assert.equal(run(adapter.chatStream(ctx, noUsage), [Buffer.from(sse(events))]), `${chunk({ role: 'assistant', content: '' })}${chunk({}, 'tool_calls')}data: [DONE]\n\n`);
  });

  test('an error event mid-stream: one OpenAI-shaped error event, no [DONE], the error recorded', () => {
    const events: [string, object][] = [
      ...TOOL_STREAM.slice(0, 4),
      ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }],
      ...TOOL_STREAM.slice(4),
    ];
    const stream = adapter.chatStream(ctx, withUsage);
    const out = run(stream, [Buffer.from(sse(events))]);
    assert.equal(
      out,
      `${chunk({ role: 'assistant', content: '' })}${chunk({ content: 'Okay, let’s check ' })}data: {"error":{"message":"Overloaded","type":"api_error","code":"upstream_overloaded","param":null}}\n\n`,
    );
    assert.equal(stream.error?.status, 503);
    assert.equal(stream.error?.code, 'upstream_overloaded');
  });

  for (const [type, status] of [['rate_limit_error', 429], ['api_error', 502], ['invalid_request_error', 400]] as const) {
    test(`a mid-stream ${type} is recorded with status ${status}`, () => {
      const stream = adapter.chatStream(ctx, noUsage);
      run(stream, [Buffer.from(sse([TOOL_STREAM[0]!, ['error', { type: 'error', error: { type, message: 'm' } }]]))]);
      assert.equal(stream.error?.status, status);
    });
  }

  test('a stream ended before message_stop ends with upstream_stream_incomplete, usage so far kept', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    const partial = Buffer.from(sse(TOOL_STREAM.slice(0, 12)));
    const out = run(stream, [partial]);
    assert.ok(
      out.endsWith(
        'data: {"error":{"message":"The Anthropic API stream ended before the answer was complete.","type":"api_error","code":"upstream_stream_incomplete","param":null}}\n\n',
      ),
    );
    assert.ok(!out.includes('[DONE]'));
    assert.equal(stream.error?.code, 'upstream_stream_incomplete');
    assert.equal(stream.usage?.completionTokens, 89);
  });

  test('fail() ends the stream once; later input is ignored', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    stream.push(Buffer.from(sse(TOOL_STREAM.slice(0, 2))));
    const reset = new HttpProblem(502, 'upstream_unreachable', 'The Anthropic API could not be reached.', { type: 'api_error' });
    assert.equal(stream.fail(reset), 'data: {"error":{"message":"The Anthropic API could not be reached.","type":"api_error","code":"upstream_unreachable","param":null}}\n\n');
    assert.equal(stream.push(Buffer.from(sse(TOOL_STREAM.slice(2)))), '');
    assert.equal(stream.end(), '');
    assert.equal(stream.error, reset);
  });

  for (const [name, body] of [
    ['not JSON', 'event: message_start\ndata: {oops\n\n'],
    ['no type', 'data: {"hello":1}\n\n'],
    ['a delta before message_start', sse(TOOL_STREAM.slice(3, 4))],
  ] as const) {
    test(`garbage (${name}) ends the stream with upstream_invalid_response`, () => {
      const stream = adapter.chatStream(ctx, noUsage);
      assert.match(run(stream, [Buffer.from(body)]), /upstream_invalid_response/);
      assert.equal(stream.error?.status, 502);
    });
  }

  test('an answer announcing tool calls without end is cut at 1,024 with upstream_invalid_response (what is kept per call is bounded)', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    const start = TOOL_STREAM[0]!;
    const tools: [string, object][] = Array.from({ length: 1100 }, (_, i) => [
      'content_block_start',
      { type: 'content_block_start', index: i, content_block: { type: 'tool_use', id: `toolu_${i}`, name: 'get_weather', input: {} } },
    ]);
    const out = run(stream, [Buffer.from(sse([start, ...tools]))]);
    assert.equal(stream.error?.code, 'upstream_invalid_response');
    assert.equal(out.split('"tool_calls"').length - 1, 1024, 'the first 1,024 went through');
  });
});
