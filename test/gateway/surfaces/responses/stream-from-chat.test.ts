import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { HttpProblem } from '../../../../src/platform/errors.ts';
import { eventsOfResponse, sseOfResponse } from '../../../../src/gateway/surfaces/responses/events.ts';
import { responseFromChat } from '../../../../src/gateway/surfaces/responses/from-chat.ts';
import { cut, run } from '../../../helpers/byte-cuts.ts';
import { COMPLETION, CTX, EXPECTED_RESPONSE, parseEvents, RECORDED, translator } from './stream-fixtures.ts';

type Fields = Record<string, unknown>;

/** Events as OpenAI sends them, numbered from 0: `event: <type>` and the data, type and sequence_number first. */
function sse(events: [string, Fields][]): string {
  return events.map(([type, fields], i) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: i, ...fields })}\n\n`).join('');
}

const START = { ...EXPECTED_RESPONSE, status: 'in_progress', output: [], usage: null };
const [RS, MSG, FC_A, FC_B] = EXPECTED_RESPONSE.output as Fields[];
const at = (id: string, index: number) => ({ item_id: id, output_index: index });
const text = (t: string) => ({ type: 'output_text', text: t, annotations: [], logprobs: [] });

const EXPECTED: [string, Fields][] = [
  ['response.created', { response: START }],
  ['response.in_progress', { response: START }],
  ['response.output_item.added', { output_index: 0, item: { ...RS, summary: [] } }],
  ['response.reasoning_summary_part.added', { ...at('rs_0a1b2c0000', 0), summary_index: 0, part: { type: 'summary_text', text: '' } }],
  ['response.reasoning_summary_text.delta', { ...at('rs_0a1b2c0000', 0), summary_index: 0, delta: 'Two ' }],
  ['response.reasoning_summary_text.delta', { ...at('rs_0a1b2c0000', 0), summary_index: 0, delta: 'reads.' }],
  ['response.reasoning_summary_text.done', { ...at('rs_0a1b2c0000', 0), summary_index: 0, text: 'Two reads.' }],
  ['response.reasoning_summary_part.done', { ...at('rs_0a1b2c0000', 0), summary_index: 0, part: { type: 'summary_text', text: 'Two reads.' } }],
  ['response.output_item.done', { output_index: 0, item: RS }],
  ['response.output_item.added', { output_index: 1, item: { ...MSG, status: 'in_progress', content: [] } }],
  ['response.content_part.added', { ...at('msg_0a1b2c0001', 1), content_index: 0, part: text('') }],
  ['response.output_text.delta', { ...at('msg_0a1b2c0001', 1), content_index: 0, delta: 'Reading', logprobs: [] }],
  ['response.output_text.delta', { ...at('msg_0a1b2c0001', 1), content_index: 0, delta: ' both. ü 🌍', logprobs: [] }],
  ['response.output_text.done', { ...at('msg_0a1b2c0001', 1), content_index: 0, text: 'Reading both. ü 🌍', logprobs: [] }],
  ['response.content_part.done', { ...at('msg_0a1b2c0001', 1), content_index: 0, part: text('Reading both. ü 🌍') }],
  ['response.output_item.done', { output_index: 1, item: MSG }],
  ['response.output_item.added', { output_index: 2, item: { ...FC_A, status: 'in_progress', arguments: '' } }],
  ['response.function_call_arguments.delta', { ...at('fc_0a1b2c0002', 2), delta: '{"path":' }],
  ['response.function_call_arguments.delta', { ...at('fc_0a1b2c0002', 2), delta: '"a.txt"}' }],
  ['response.function_call_arguments.done', { ...at('fc_0a1b2c0002', 2), name: 'stat', arguments: '{"path":"a.txt"}' }],
  ['response.output_item.done', { output_index: 2, item: FC_A }],
  ['response.output_item.added', { output_index: 3, item: { ...FC_B, status: 'in_progress', arguments: '' } }],
  ['response.function_call_arguments.delta', { ...at('fc_0a1b2c0003', 3), delta: '{"file_path":"b.txt"}' }],
  ['response.function_call_arguments.done', { ...at('fc_0a1b2c0003', 3), name: 'Read', arguments: '{"file_path":"b.txt"}' }],
  ['response.output_item.done', { output_index: 3, item: FC_B }],
  ['response.completed', { response: EXPECTED_RESPONSE }],
];

const chunks = (...events: string[]) => Buffer.from(events.map((e) => `data: ${e}\n\n`).join(''));
const head = '{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":';

/** Consecutive deltas of one part merged, and sequence numbers dropped: events equal up to how the text was split. */
function merged(events: Fields[]): Fields[] {
  const out: Fields[] = [];
  for (const { sequence_number, ...event } of events) {
    const last = out[out.length - 1];
    const type = event['type'] as string;
    if (type.endsWith('.delta') && last !== undefined && last['type'] === type && last['output_index'] === event['output_index']) {
      last['delta'] = (last['delta'] as string) + (event['delta'] as string);
    } else out.push(event);
  }
  return out;
}

describe('ResponsesFromChat: a Chat Completions stream as Responses events', () => {
  test("reasoning, text and parallel calls become consecutive items in OpenAI's order, numbered from 0, byte for byte", () => {
    const stream = translator();
    assert.equal(run(stream, [RECORDED]), sse(EXPECTED));
    assert.equal(stream.error, undefined);
    assert.equal(stream.model, 'deepseek-chat');
    assert.deepEqual(stream.usage, { promptTokens: 1200, cachedTokens: 1024, cacheWriteTokens: 0, completionTokens: 40, reasoningTokens: 12 });
    assert.deepEqual(stream.response, EXPECTED_RESPONSE);
    assert.equal(stream.push(Buffer.from('data: {}\n\n')), '');
    assert.equal(stream.end(), '');
  });

  test('every byte boundary and any chunking give the same output (property)', () => {
    const expected = sse(EXPECTED);
    for (let i = 1; i < RECORDED.length; i++) assert.equal(run(translator(), cut(RECORDED, [i])), expected, `cut at ${i}`);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: RECORDED.length - 1 }), { maxLength: 80 }), (offsets) => {
        assert.equal(run(translator(), cut(RECORDED, offsets)), expected);
      }),
      { numRuns: 300 },
    );
  });

  test('eventsOfResponse of the whole answer is the same stream, up to how deltas are split; sseOfResponse frames it alike', () => {
    const whole = responseFromChat(COMPLETION, CTX);
    const replayed = eventsOfResponse(whole).map((data) => JSON.parse(data) as Fields);
    const streamed = parseEvents(run(translator(), [RECORDED])).map((event) => event.data);
    assert.deepEqual(merged(replayed), merged(streamed));
    assert.deepEqual(
      replayed.map((event) => event['sequence_number']),
      replayed.map((_, i) => i),
    );
    const framed = parseEvents(sseOfResponse(whole));
    assert.deepEqual(
      framed.map((event) => event.data),
      replayed,
    );
    for (const event of framed) assert.equal(event.event, event.data['type']);
  });

  test('eventsOfResponse: other items are added and done whole; reasoning text parts stream as reasoning_text; a failed response ends with error, response.failed', () => {
    const response = {
      ...EXPECTED_RESPONSE,
      status: 'failed',
      error: { code: 'server_error', message: 'Boom.' },
      output: [
        { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } },
        { id: 'rs_1', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Hm.' }], encrypted_content: 'gAAA' },
      ],
    };
    const events = eventsOfResponse(response).map((data) => JSON.parse(data) as Fields);
    assert.deepEqual(
      events.map((event) => event['type']),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.output_item.done',
        'response.output_item.added',
        'response.content_part.added',
        'response.reasoning_text.delta',
        'response.reasoning_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'error',
        'response.failed',
      ],
    );
    assert.deepEqual(events[2]!['item'], { ...response.output[0], status: 'in_progress' });
    assert.deepEqual(events[4]!['item'], { id: 'rs_1', type: 'reasoning', summary: [], content: [], encrypted_content: 'gAAA' });
    assert.deepEqual(events[10], {
      type: 'error',
      sequence_number: 10,
      code: 'server_error',
      message: 'Boom.',
      param: null,
      error: { message: 'Boom.', type: 'server_error', code: 'server_error', param: null },
    });
    assert.deepEqual((events[0]!['response'] as Fields)['error'], null);
  });

  test('an answer with no content still has the whole sequence; length ends incomplete, the last item too', () => {
    const empty = parseEvents(run(translator(), [chunks(`${head}{"role":"assistant","content":""},"finish_reason":null}]}`, `${head}{},"finish_reason":"stop"}]}`, '[DONE]')]));
    assert.deepEqual(
      empty.map((event) => event.event),
      ['response.created', 'response.in_progress', 'response.completed'],
    );
    assert.equal((empty[0]!.data['response'] as Fields)['model'], 'm');
    const stream = translator();
    const cutShort = parseEvents(run(stream, [chunks(`${head}{"content":"Half a sen"},"finish_reason":"length"}]}`, '[DONE]')]));
    const last = cutShort[cutShort.length - 1]!;
    assert.equal(last.event, 'response.incomplete');
    assert.deepEqual((last.data['response'] as Fields)['incomplete_details'], { reason: 'max_output_tokens' });
    assert.equal(stream.response?.['status'], 'incomplete');
    assert.equal(((stream.response!['output'] as Fields[])[0]!)['status'], 'incomplete');
    const itemDone = cutShort.find((event) => event.event === 'response.output_item.done')!;
    assert.equal((itemDone.data['item'] as Fields)['status'], 'incomplete');
    // The replay of that response says the same.
    assert.deepEqual(
      merged(eventsOfResponse(stream.response!).map((data) => JSON.parse(data))),
      merged(cutShort.map((event) => event.data)),
    );
  });

  test('a refusal streams as a refusal part', () => {
    const events = parseEvents(run(translator(), [chunks(`${head}{"refusal":"I cannot"},"finish_reason":null}]}`, `${head}{"refusal":" help."},"finish_reason":"stop"}]}`, '[DONE]')]));
    assert.deepEqual(
      events.map((event) => event.event),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.refusal.delta',
        'response.refusal.delta',
        'response.refusal.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.deepEqual(events[7]!.data['part'], { type: 'refusal', refusal: 'I cannot help.' });
  });

  test("the provider's error mid-stream: an error event (flat and nested), then response.failed with the output so far, and nothing after", () => {
    const stream = translator();
    const out = run(stream, [chunks(`${head}{"content":"Hel"},"finish_reason":null}]}`, '{"error":{"code":429,"message":"Rate limited upstream"}}', `${head}{"content":"lo"},"finish_reason":null}]}`)]);
    const events = parseEvents(out);
    assert.deepEqual(
      events.map((event) => event.event),
      ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'error', 'response.failed'],
    );
    assert.deepEqual(
      events.map((event) => event.data['sequence_number']),
      [0, 1, 2, 3, 4, 5, 6],
    );
    assert.equal(stream.error?.status, 429);
    const error = events[5]!.data;
    assert.deepEqual(error, {
      type: 'error',
      sequence_number: 5,
      code: stream.error?.code,
      message: 'Rate limited upstream',
      param: null,
      error: { message: 'Rate limited upstream', type: 'requests', code: stream.error?.code, param: null },
    });
    const failed = events[6]!.data['response'] as Fields;
    assert.equal(failed['status'], 'failed');
    assert.deepEqual(failed['error'], { code: stream.error?.code, message: 'Rate limited upstream' });
    assert.deepEqual(failed['output'], [{ id: 'msg_0a1b2c0000', type: 'message', status: 'incomplete', role: 'assistant', content: [text('Hel')] }]);
    assert.equal(stream.response, undefined);
    assert.equal(stream.end(), '');
  });

  test('fail(), and a body that ends before [DONE], end the same way; an error before any chunk still starts the response', () => {
    const failing = translator();
    const begun = failing.push(chunks(`${head}{"content":"Hi"},"finish_reason":null}]}`));
    const ended = failing.fail(new HttpProblem(504, 'upstream_timeout', 'The DeepSeek API did not answer in time.'));
    assert.deepEqual(
      parseEvents(begun + ended).map((event) => event.event).slice(-2),
      ['error', 'response.failed'],
    );
    assert.equal(failing.error?.code, 'upstream_timeout');
    const early = translator();
    const events = parseEvents(run(early, [chunks(`${head}{"content":"Hi"},"finish_reason":null}]}`)]));
    assert.equal(events[events.length - 1]!.event, 'response.failed');
    assert.equal(early.error?.code, 'upstream_stream_incomplete');
    const nothing = translator();
    assert.deepEqual(
      parseEvents(nothing.fail(new HttpProblem(502, 'upstream_unreachable', 'The DeepSeek API could not be reached.'))).map((event) => event.event),
      ['response.created', 'response.in_progress', 'error', 'response.failed'],
    );
  });

  test('a provider that goes back to a call it had moved on from fails with upstream_invalid_response', () => {
    const call = (index: number, args: string) => `${head}{"tool_calls":[{"index":${index},"id":"c${index}","function":{"name":"f","arguments":${JSON.stringify(args)}}}]},"finish_reason":null}]}`;
    const stream = translator();
    const events = parseEvents(run(stream, [chunks(call(0, '{"a":'), call(1, '{}'), call(0, '1}'), '[DONE]')]));
    assert.equal(stream.error?.code, 'upstream_invalid_response');
    assert.match(stream.error?.message ?? '', /DeepSeek/);
    assert.deepEqual(
      events.map((event) => event.event).slice(-2),
      ['error', 'response.failed'],
    );
  });

  test('a call with no id gets one from the response id; a name not in the table is kept as it is', () => {
    const stream = translator();
    run(stream, [chunks(`${head}{"tool_calls":[{"index":0,"function":{"name":"other__x","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`, '[DONE]')]);
    assert.deepEqual(stream.response?.['output'], [{ id: 'fc_0a1b2c0000', type: 'function_call', status: 'completed', call_id: 'call_0a1b2c0000', name: 'other__x', arguments: '{}' }]);
  });

  test('linear in the answer: 200,000 text deltas translate in a few seconds at most', () => {
    const piece = Buffer.from(`data: ${head}{"content":"ab"},"finish_reason":null}]}\n\n`);
    const stream = translator();
    const started = performance.now();
    let bytes = 0;
    for (let i = 0; i < 200_000; i++) bytes += stream.push(piece).length;
    bytes += stream.push(chunks(`${head}{},"finish_reason":"stop"}]}`, '[DONE]')).length;
    const elapsed = performance.now() - started;
    assert.equal(((stream.response!['output'] as Fields[])[0]!['content'] as Fields[])[0]!['text'], 'ab'.repeat(200_000));
    assert.ok(bytes > 0);
    assert.ok(elapsed < 10_000, `${elapsed} ms`);
  });
});
