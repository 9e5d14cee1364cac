import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { HttpProblem } from '../../../../src/platform/errors.ts';
import { cut, run } from '../../../helpers/byte-cuts.ts';
import { ev, RECORDED, translator } from './stream-fixtures.ts';

const delta = (index: number, d: unknown) => ev('content_block_delta', { type: 'content_block_delta', index, delta: d });
const start = (index: number, block: unknown) => ev('content_block_start', { type: 'content_block_start', index, content_block: block });
const stop = (index: number) => ev('content_block_stop', { type: 'content_block_stop', index });
const ZERO = { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };
const messageStart = (model = 'gpt-4.1-2025-04-14') =>
  ev('message_start', {
    type: 'message_start',
    message: { id: 'msg_req1', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: ZERO },
  });

const EXPECTED =
  messageStart() +
  start(0, { type: 'thinking', thinking: '', signature: '' }) +
  delta(0, { type: 'thinking_delta', thinking: 'Two ' }) +
  delta(0, { type: 'thinking_delta', thinking: 'reads.' }) +
  stop(0) +
  start(1, { type: 'text', text: '' }) +
  delta(1, { type: 'text_delta', text: 'Reading' }) +
  delta(1, { type: 'text_delta', text: ' both. ü 🌍' }) +
  stop(1) +
  start(2, { type: 'tool_use', id: 'call_a', name: 'Read', input: {} }) +
  delta(2, { type: 'input_json_delta', partial_json: '{"file_path":' }) +
  delta(2, { type: 'input_json_delta', partial_json: '"a.txt"}' }) +
  stop(2) +
  start(3, { type: 'tool_use', id: 'call_b', name: 'Read', input: {} }) +
  delta(3, { type: 'input_json_delta', partial_json: '{"file_path":"b.txt"}' }) +
  stop(3) +
  ev('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { input_tokens: 176, cache_creation_input_tokens: 0, cache_read_input_tokens: 1024, output_tokens: 40 },
  }) +
  ev('message_stop', { type: 'message_stop' });

const sse = (...events: string[]) => Buffer.from(events.map((e) => `data: ${e}\n\n`).join(''));
const head = '{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":';

describe('MessagesFromChat: a Chat Completions stream as Anthropic events', () => {
  test('reasoning, text and parallel tool calls become consecutive blocks, then message_delta with usage, byte for byte', () => {
    const stream = translator();
    assert.equal(run(stream, [RECORDED]), EXPECTED);
    assert.equal(stream.error, undefined);
    assert.equal(stream.model, 'gpt-4.1-2025-04-14');
    assert.deepEqual(stream.usage, { promptTokens: 1200, cachedTokens: 1024, cacheWriteTokens: 0, completionTokens: 40, reasoningTokens: 12 });
    assert.equal(stream.push(Buffer.from('data: {}\n\n')), '');
    assert.equal(stream.end(), '');
  });

  test('every byte boundary and any chunking give the same output (property)', () => {
    for (let i = 1; i < RECORDED.length; i++) assert.equal(run(translator(), cut(RECORDED, [i])), EXPECTED, `cut at ${i}`);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: RECORDED.length - 1 }), { maxLength: 80 }), (offsets) => {
        assert.equal(run(translator(), cut(RECORDED, offsets)), EXPECTED);
      }),
      { numRuns: 300 },
    );
  });

  test('an answer with no content still has the whole sequence; a stop finish is end_turn', () => {
    const out = run(translator(), [sse(`${head}{"role":"assistant","content":""},"finish_reason":null}]}`, `${head}{},"finish_reason":"stop"}]}`, '[DONE]')]);
    assert.equal(
      out,
      messageStart('m') +
        ev('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: ZERO }) +
        ev('message_stop', { type: 'message_stop' }),
    );
    const length = run(translator(), [sse(`${head}{"content":"a"},"finish_reason":"length"}]}`, '[DONE]')]);
    assert.match(length, /"stop_reason":"max_tokens"/);
  });

  test("the provider's error event mid-stream becomes one Anthropic error event, typed by status, and nothing after", () => {
    const stream = translator();
    const out = run(stream, [
      sse(`${head}{"content":"Hel"},"finish_reason":null}]}`, '{"error":{"code":429,"message":"Rate limited upstream"}}', `${head}{"content":"lo"},"finish_reason":null}]}`, '[DONE]'),
    ]);
    assert.equal(
      out,
      messageStart('m') +
        start(0, { type: 'text', text: '' }) +
        delta(0, { type: 'text_delta', text: 'Hel' }) +
        ev('error', { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limited upstream' } }),
    );
    assert.equal(stream.error?.status, 429);
    const server = translator();
    assert.equal(
      run(server, [sse('{"error":{"message":"The server had an error.","type":"server_error"}}')]),
      ev('error', { type: 'error', error: { type: 'api_error', message: 'The server had an error.' } }),
    );
  });

  test('fail() and a body ended early end with an error event', () => {
    const failed = translator();
    let out = failed.push(sse(`${head}{"content":"Hi"},"finish_reason":null}]}`));
    out += failed.fail(new HttpProblem(504, 'upstream_timeout', 'The OpenAI API did not answer in time.'));
    assert.ok(out.endsWith(ev('error', { type: 'error', error: { type: 'timeout_error', message: 'The OpenAI API did not answer in time.' } })));
    assert.equal(failed.error?.code, 'upstream_timeout');
    assert.equal(failed.end(), '');
    assert.equal(failed.fail(new HttpProblem(502, 'x', 'y')), '');

    const cutShort = translator();
    const partial = RECORDED.subarray(0, RECORDED.indexOf('data: [DONE]'));
    const ended = run(cutShort, [partial]);
    assert.equal(cutShort.error?.code, 'upstream_stream_incomplete');
    assert.equal(
      ended,
      EXPECTED.slice(0, EXPECTED.indexOf(stop(3))) +
        ev('error', { type: 'error', error: { type: 'api_error', message: 'The OpenAI API stream ended before the answer was complete.' } }),
    );
  });

  test('a provider that returns to a tool call it had moved on from ends the stream rather than interleave blocks', () => {
    const call = (index: number, extra: string) => `${head}{"tool_calls":[{"index":${index}${extra}}]},"finish_reason":null}]}`;
    const stream = translator();
    const out = run(stream, [
      sse(call(0, ',"id":"a","function":{"name":"f","arguments":"{"}'), call(1, ',"id":"b","function":{"name":"g","arguments":"{}"}'), call(0, ',"function":{"arguments":"}"}'), '[DONE]'),
    ]);
    assert.equal(stream.error?.code, 'upstream_invalid_response');
    assert.ok(out.endsWith(ev('error', { type: 'error', error: { type: 'api_error', message: 'The OpenAI API sent an answer that could not be understood.' } })));
  });

  test('settleUnfinished reaches the inner stream', () => {
    const stream = translator();
    stream.push(sse(`${head}{"content":"abcdef"},"finish_reason":null}]}`));
    stream.settleUnfinished(() => 33);
    assert.equal(stream.usage?.promptTokens, 33);
    assert.equal(stream.usage?.estimated, true);
  });
});
