import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { JsonObject } from '../../../../src/gateway/providers/json.ts';
import { ResponsesRelay } from '../../../../src/gateway/surfaces/responses/passthrough.ts';
import { cut, run } from '../../../helpers/byte-cuts.ts';

/** A Responses stream as OpenAI sends it (API reference, "Streaming events"): a message of three deltas. */
function openAiStream(): string {
  const response = (status: string, extra: JsonObject = {}) => ({
    id: 'resp_1',
    object: 'response',
    status,
    model: 'gpt-4o-mini-2024-07-18',
    store: false,
    previous_response_id: null,
    output: [],
    usage: null,
    ...extra,
  });
  const item = { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hé, "you"\n', annotations: [] }] };
  const events: JsonObject[] = [
    { type: 'response.created', sequence_number: 0, response: response('in_progress') },
    { type: 'response.in_progress', sequence_number: 1, response: response('in_progress') },
    { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', sequence_number: 3, item_id: 'msg_1', output_index: 0, content_index: 0, part: { type: 'output_text', text: '' } },
    { type: 'response.output_text.delta', sequence_number: 4, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hé, ' },
    { type: 'response.output_text.delta', sequence_number: 5, item_id: 'msg_1', output_index: 0, content_index: 0, delta: '"you"' },
    { type: 'response.output_text.delta', sequence_number: 6, item_id: 'msg_1', output_index: 0, content_index: 0, delta: '\n' },
    { type: 'response.output_text.done', sequence_number: 7, item_id: 'msg_1', output_index: 0, content_index: 0, text: 'Hé, "you"\n' },
    { type: 'response.content_part.done', sequence_number: 8, item_id: 'msg_1', output_index: 0, content_index: 0, part: item.content[0] },
    { type: 'response.output_item.done', sequence_number: 9, output_index: 0, item },
    {
      type: 'response.completed',
      sequence_number: 10,
      response: response('completed', {
        output: [item],
        usage: { input_tokens: 20, input_tokens_details: { cached_tokens: 8 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 24 },
      }),
    },
  ];
  return events.map((e) => `event: ${e['type']}\ndata: ${JSON.stringify(e)}\n\n`).join('');
}

const echo = { store: true, previousResponseId: 'resp_0' };
const events = (text: string) => [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as JsonObject);

describe('ResponsesRelay: an OpenAI Responses stream relayed', () => {
  test('every event as it came, in order; the response objects echo what the client asked, the final usage its cost', () => {
    const stored: JsonObject[] = [];
    const relay = new ResponsesRelay('OpenAI', echo, () => 0.25, (r) => stored.push(r));
    const upstream = openAiStream();
    const out = run(relay, [Buffer.from(upstream)]);
    const sent = events(upstream);
    const got = events(out);
    assert.equal(got.length, sent.length);
    for (let i = 0; i < sent.length; i++) {
      const s = sent[i]!;
      if (s['response'] === undefined) assert.deepEqual(got[i], s, `event ${i} unchanged`);
      else {
        const r = got[i]!['response'] as JsonObject;
        assert.equal(r['store'], true);
        assert.equal(r['previous_response_id'], 'resp_0');
      }
    }
    assert.equal(((got.at(-1)!['response'] as JsonObject)['usage'] as JsonObject)['cost'], 0.25);
    assert.deepEqual(relay.usage, { promptTokens: 20, cachedTokens: 8, cacheWriteTokens: 0, completionTokens: 4, reasoningTokens: 0 });
    assert.equal(relay.model, 'gpt-4o-mini-2024-07-18');
    assert.equal(stored.length, 1, 'the complete response handed over once, for storage');
  });

  test('the same output however the bytes are cut (property)', () => {
    const upstream = Buffer.from(openAiStream());
    const whole = run(new ResponsesRelay('OpenAI', echo, () => 0.25, () => {}), [upstream]);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: upstream.length - 1 }), { maxLength: 12 }), (offsets) => {
        assert.equal(run(new ResponsesRelay('OpenAI', echo, () => 0.25, () => {}), cut(upstream, offsets)), whole);
      }),
      { numRuns: 300 },
    );
  });

  test('a stream cut off mid-way ends with an error event and response.failed numbered after the last event, and an estimated usage', () => {
    const upstream = openAiStream();
    const until = upstream.indexOf('event: response.output_text.done');
    const relay = new ResponsesRelay('OpenAI', echo, () => undefined, () => assert.fail('nothing complete to store'));
    const got = events(run(relay, [Buffer.from(upstream.slice(0, until))]));
    assert.deepEqual(
      got.slice(-2).map((e) => [e['type'], e['sequence_number']]),
      [
        ['error', 7],
        ['response.failed', 8],
      ],
    );
    assert.equal((got.at(-1)!['response'] as JsonObject)['status'], 'failed');
    assert.equal(relay.error?.code, 'upstream_stream_incomplete');
    // A request relayed as the client sent it (store: false): the start is kept unparsed, and read for response.failed.
    const asSent = events(run(new ResponsesRelay('OpenAI', { store: undefined, previousResponseId: null }, () => undefined, () => {}), [Buffer.from(upstream.slice(0, until))]));
    assert.deepEqual(asSent.slice(0, 2), events(upstream).slice(0, 2), 'the start as OpenAI sent it');
    assert.equal((asSent.at(-1)!['response'] as JsonObject)['id'], 'resp_1');
    relay.settleUnfinished(() => 20);
    assert.ok(relay.usage?.estimated && relay.usage.completionTokens >= 3, 'the deltas relayed are counted');
  });

  test("an upstream error event is relayed, and its response.failed ends the stream; one that never comes is written", () => {
    const head = openAiStream().split('event: response.output_text.done')[0]!;
    const error = `event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: 7, code: 'server_error', message: 'boom', param: null })}\n\n`;
    const failed = `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: 8, response: { id: 'resp_1', object: 'response', status: 'failed', error: { code: 'server_error', message: 'boom' } } })}\n\n`;
    const both = new ResponsesRelay('OpenAI', echo, () => undefined, () => {});
    const out = run(both, [Buffer.from(head + error + failed)]);
    assert.deepEqual(events(out).slice(-2).map((e) => e['type']), ['error', 'response.failed']);
    assert.match(both.error?.message ?? '', /boom/);
    const alone = new ResponsesRelay('OpenAI', echo, () => undefined, () => {});
    const written = events(run(alone, [Buffer.from(head + error)]));
    assert.deepEqual(written.slice(-2).map((e) => [e['type'], e['sequence_number']]), [
      ['error', 7],
      ['response.failed', 8],
    ]);
  });
});
