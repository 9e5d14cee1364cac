import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventsToMessage, MESSAGES_ANSWERS, messageToEvents } from '../../../../src/gateway/surfaces/messages/answer-format.ts';
import { HttpProblem } from '../../../../src/platform/errors.ts';

/** A message with every kind of block a cached answer may hold, known or not. */
const message = {
  id: 'msg_01',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [
    { type: 'thinking', thinking: 'Let me look it up.', signature: 'EqQBCkYIBxgCKkA+sig==' },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' },
    { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'herons' } },
    { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [{ type: 'web_search_result', url: 'https://example.com', title: 'Herons' }] },
    { type: 'text', text: 'Herons are birds.', citations: [{ type: 'web_search_result_location', url: 'https://example.com', cited_text: 'birds' }] },
    { type: 'text', text: 'Plain.', citations: null },
    { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { file_path: '/tmp/a.txt', lines: [1, 2] } },
    { type: 'a_block_from_the_future', payload: { x: 1 } },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  container: null,
  usage: { input_tokens: 10, cache_creation_input_tokens: 2, cache_read_input_tokens: 3, output_tokens: 40, service_tier: 'standard' },
};

describe('the Messages answer format (what the cache stores and replays)', () => {
  test('a message cut into events and joined back is the same message, every block kind carried', () => {
    const events = messageToEvents(JSON.stringify(message));
    assert.deepEqual(JSON.parse(eventsToMessage(events)), message);
    const types = events.map((e) => JSON.parse(e).type);
    assert.equal(types[0], 'message_start');
    assert.equal(types.at(-1), 'message_delta');
    assert.ok(!types.includes('message_stop'), 'message_stop is the terminal event, not a chunk');
    const start = JSON.parse(events[0]!).message;
    assert.deepEqual([start.content, start.stop_reason, start.usage.output_tokens], [[], null, 40]);
    const deltas = events.map((e) => JSON.parse(e)).filter((e) => e.type === 'content_block_delta').map((e) => e.delta.type);
    assert.deepEqual(deltas, ['thinking_delta', 'signature_delta', 'input_json_delta', 'text_delta', 'citations_delta', 'text_delta', 'input_json_delta']);
  });

  test('a stream split anywhere joins as the SDKs accumulate it: deltas appended, partial JSON parsed at the block stop, usage merged', () => {
    const e = (data: unknown) => JSON.stringify(data);
    const chunks = [
      e({ type: 'message_start', message: { id: 'msg_2', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } }),
      e({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      e({ type: 'ping' }),
      e({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
      e({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }),
      e({ type: 'content_block_stop', index: 0 }),
      e({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} } }),
      e({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } }),
      e({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '[1,"x"]}' } }),
      e({ type: 'content_block_stop', index: 1 }),
      e({ type: 'an_event_from_the_future', anything: true }),
      e({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 7, input_tokens: null } }),
    ];
    assert.deepEqual(JSON.parse(eventsToMessage(chunks)), {
      id: 'msg_2',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [
        { type: 'text', text: 'Hello' },
        { type: 'tool_use', id: 't1', name: 'f', input: { a: [1, 'x'] } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 7 },
    });
  });

  test('events: chunks named by their type, message_stop the end, errors in Anthropic\'s shape and read back as problems', () => {
    const f = MESSAGES_ANSWERS;
    const delta = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\"b"}}';
    assert.equal(f.chunkEvent(delta), `event: content_block_delta\ndata: ${delta}\n\n`);
    assert.equal(f.chunkEvent('{ "type" : "ping" }'), 'event: ping\ndata: { "type" : "ping" }\n\n', 'a type not at the start is parsed');
    assert.deepEqual(f.classify(f.chunkEvent(delta)), { kind: 'chunk', data: delta });
    assert.deepEqual(f.classify(f.done), { kind: 'done' });
    const error = f.errorEvent(new HttpProblem(503, 'upstream_overloaded', 'Overloaded.'));
    assert.equal(error, 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded."}}\n\n');
    const read = f.classify(error);
    assert.equal(read.kind, 'error');
    assert.equal(read.kind === 'error' && read.problem.status, 503);
    assert.equal(read.kind === 'error' && read.problem.message, 'Overloaded.');
  });
});
