import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { openAiCompatibleAdapter } from '../../../src/gateway/providers/openai-compatible/index.ts';
import { MAX_EVENT_CHARS, SseEventTooLarge, SseParser, sseEvent, SSE_DONE } from '../../../src/gateway/providers/sse.ts';
import { cut } from '../../helpers/byte-cuts.ts';

/** Parses `chunks` (strings or Buffers) and returns [event, data] pairs in order. */
function parse(...chunks: (string | Buffer)[]): [string, string][] {
  const parser = new SseParser();
  const events: [string, string][] = [];
  const listener = (event: string, data: string) => events.push([event, data]);
  for (const chunk of chunks) parser.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk, listener);
  parser.end(listener);
  return events;
}

describe('SSE parser (WHATWG HTML 9.2.6)', () => {
  test('an unnamed event is a "message"; a named one keeps its name', () => {
    assert.deepEqual(parse('data: one\n\nevent: ping\ndata: two\n\n'), [
      ['message', 'one'],
      ['ping', 'two'],
    ]);
  });

  test('data lines are joined with LF', () => {
    assert.deepEqual(parse('data: a\ndata: b\ndata:\ndata: c\n\n'), [['message', 'a\nb\n\nc']]);
  });

  test('lines may end in CRLF, CR or LF, mixed', () => {
    assert.deepEqual(parse('data: a\r\n\r\ndata: b\r\rdata: c\n\n'), [
      ['message', 'a'],
      ['message', 'b'],
      ['message', 'c'],
    ]);
  });

  test('a CRLF split between two chunks is one line end', () => {
    assert.deepEqual(parse('data: a\r', '\n\r', '\ndata: b\r', '\r'), [
      ['message', 'a'],
      ['message', 'b'],
    ]);
  });

  test('only one space after the colon is removed; no space is fine', () => {
    assert.deepEqual(parse('data:x\n\ndata:  y\n\n'), [
      ['message', 'x'],
      ['message', ' y'],
    ]);
  });

  test('comments, unknown fields, id and retry are ignored; a field name must match exactly', () => {
    assert.deepEqual(parse(': keep-alive\nid: 7\nretry: 10\nfoo: bar\ndatafoo: no\neventx: no\ndata: yes\n\n'), [['message', 'yes']]);
  });

  test('a line with the field name alone gives the empty value', () => {
    assert.deepEqual(parse('data\n\n'), [['message', '']]);
  });

  test('a blank line with no data dispatches nothing and resets the event name', () => {
    assert.deepEqual(parse('event: x\n\ndata: a\n\n'), [['message', 'a']]);
  });

  test('an event cut off by the end of the stream is discarded', () => {
    assert.deepEqual(parse('data: a\n\ndata: b\n'), [['message', 'a']]);
    assert.deepEqual(parse('data: a\n\ndata: b'), [['message', 'a']]);
  });

  test('a leading byte order mark is stripped', () => {
    assert.deepEqual(parse('\uFEFFdata: a\n\n'), [['message', 'a']]);
  });

  test('UTF-8 sequences split between chunks are decoded whole', () => {
    const bytes = Buffer.from('data: héllo 🌍 世界\n\n');
    for (let i = 1; i < bytes.length; i++) {
      assert.deepEqual(parse(bytes.subarray(0, i), bytes.subarray(i)), [['message', 'héllo 🌍 世界']], `cut at ${i}`);
    }
  });

  test('any chunking of a stream gives the same events (property)', () => {
    const stream = Buffer.from(
      ': hi\r\nevent: a\r\ndata: {"x":"é🌍"}\r\n\r\ndata: 1\rdata: 2\r\rdata: 3\n\n\uFEFFdata: bom\n\nevent: b\ndata:\n\ndata: tail',
    );
    const expected = parse(stream);
    // A byte order mark is stripped only at the very start: mid-stream it makes "\uFEFFdata" an unknown field.
    assert.deepEqual(expected, [
      ['a', '{"x":"é🌍"}'],
      ['message', '1\n2'],
      ['message', '3'],
      ['b', ''],
    ]);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 40 }), (offsets) => {
        assert.deepEqual(parse(...cut(stream, offsets)), expected);
      }),
      { numRuns: 500 },
    );
    // Every single byte on its own.
    assert.deepEqual(parse(...cut(stream, Array.from({ length: stream.length - 1 }, (_, i) => i + 1))), expected);
  });
});

describe('SSE parser: what it holds is bounded', () => {
  const events: string[] = [];
  const listener = (_event: string, data: string) => events.push(data);

  test('a line longer than the bound throws SseEventTooLarge, whether it came whole or in pieces', () => {
    assert.throws(() => new SseParser(100).push(Buffer.from(`data: ${'a'.repeat(200)}`), listener), SseEventTooLarge);
    const parser = new SseParser(100);
    for (let i = 0; i < 9; i++) parser.push(Buffer.from('aaaaaaaaaa'), listener);
    assert.throws(() => parser.push(Buffer.from('a'.repeat(20)), listener), SseEventTooLarge);
  });

  test('an event whose data lines add up past the bound throws, each line being short', () => {
    const parser = new SseParser(100);
    assert.throws(() => {
      for (let i = 0; i < 20; i++) parser.push(Buffer.from('data: 0123456789\n'), listener);
    }, SseEventTooLarge);
  });

  test('lines and events within the bound, any number of them, pass as before', () => {
    events.length = 0;
    const parser = new SseParser(100);
    for (let i = 0; i < 1000; i++) parser.push(Buffer.from(`data: ${'x'.repeat(90)}\n\n`), listener);
    parser.end(listener);
    assert.equal(events.length, 1000);
    assert.equal(MAX_EVENT_CHARS, 8 * 1024 * 1024, 'the default bound, as docs/providers.md says');
  });

  test('a stream translator ends the stream with upstream_event_too_large past the default bound', () => {
    const stream = openAiCompatibleAdapter({ name: 'OpenAI' }).chatStream(
      { model: 'gpt-4o', apiKey: 'k', baseUrl: new URL('https://api.openai.com/v1'), requestId: 'r1', created: 1 },
      { includeUsage: false, cost: () => 0 },
    );
    const piece = Buffer.alloc(1024 * 1024, 0x61);
    let out = stream.push(Buffer.from('data: '));
    for (let i = 0; i < 9 && !stream.error; i++) out += stream.push(piece);
    assert.equal(stream.error?.code, 'upstream_event_too_large');
    assert.equal(stream.error?.status, 502);
    assert.match(out, /^data: \{"error":\{.*"code":"upstream_event_too_large"/);
    assert.equal(stream.push(piece), '', 'nothing more is read');
  });
});

describe('SSE writer', () => {
  test('one data line, or several when the data has line breaks', () => {
    assert.equal(sseEvent('{"a":1}'), 'data: {"a":1}\n\n');
    assert.equal(sseEvent('a\nb\r\nc'), 'data: a\ndata: b\ndata: c\n\n');
    assert.equal(sseEvent('x', 'error'), 'event: error\ndata: x\n\n');
    assert.equal(SSE_DONE, 'data: [DONE]\n\n');
  });

  test('what the writer writes, the parser reads back', () => {
    fc.assert(
      fc.property(fc.string(), (data) => {
        const normalised = data.replace(/\r\n|\r/g, '\n');
        assert.deepEqual(parse(sseEvent(data)), [['message', normalised]]);
      }),
    );
  });
});
