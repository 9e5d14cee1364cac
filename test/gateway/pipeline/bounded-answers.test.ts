import assert from 'node:assert/strict';
import { type IncomingMessage, request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { MODEL, rawPost, streamed, textOf, until, usageRecord } from './cache-helpers.ts';

/**
 * Issue 31, defect 5, through the live gateway: what one call may make the
 * gateway hold is bounded. A dedup flight keeps at most the cache's entry
 * limit of an answer (4 KiB here), so a client that comes once the flight
 * has dropped its start makes its own call; a client sharing a stream that
 * stops reading is cut off instead of buffered for; an upstream SSE event
 * over the parser's bound ends the call with upstream_event_too_large; a
 * non-streamed answer over GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES (64 KiB
 * here) is refused with upstream_response_too_large. The process-level
 * measure of the same (hundreds of MB through the gateway's own process) is
 * test/reliability/stream-memory.test.ts.
 */

const MiB = 2 ** 20;
const ENTRY_LIMIT = 4096;
const ask = (content: string) => ({ model: MODEL, messages: [{ role: 'user' as const, content }], temperature: 0 });
const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

/** A streamed request over node:http whose reading the test controls; `ended` has the status, request id and the last 400 characters. */
function rawStream(gw: LiveGateway, apiKey: string, content: string) {
  let response: IncomingMessage | undefined;
  const opened = new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' } });
    req.on('response', (res) => {
      response = res;
      resolve(res);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ ...ask(content), stream: true }));
  });
  const ended = opened.then(
    (res) =>
      new Promise<{ status: number; requestId: string; tail: string }>((resolve) => {
        let tail = '';
        res.on('data', (chunk: Buffer) => {
          tail = (tail + chunk.toString('latin1')).slice(-400);
        });
        const done = () => resolve({ status: res.statusCode ?? 0, requestId: String(res.headers['x-gateway-request-id']), tail });
        res.on('end', done).on('error', done);
      }),
  );
  return { opened, ended, pause: () => response?.pause(), resume: () => response?.resume() };
}

describe('bounded answers: what one call can make the gateway hold', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite', {
      GATEWAY_CACHE_ENABLED: 'true',
      GATEWAY_CACHE_MAX_ENTRY_BYTES: String(ENTRY_LIMIT),
      GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES: String(64 * 1024),
      GATEWAY_RETRIES: '0',
      GATEWAY_DEFAULT_FALLBACKS: '0',
    });
  });
  after(() => gw.close());
  const fresh = async () => {
    gw.fake.reset();
    t = await gw.tenant({ providers: ['openai'] });
  };

  test('past the entry limit a flight drops what it held: streams already open get every chunk live; a client arriving later makes its own call', async () => {
    await fresh();
    const text = words(100, 'w');
    gw.fake.setBehaviour({ latencyMs: 400, chunkDelayMs: 20, chunks: 100, text });
    const body = { ...ask('a long answer'), stream: true as const };
    // The leader, and a stream that joins before the answer starts.
    let leaderChunks = 0;
    let late: Promise<Awaited<ReturnType<typeof streamed>>> | undefined;
    const leader = (async () => {
      const { data, response } = await t.openai.chat.completions.create(body).withResponse();
      const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
      for await (const chunk of data) {
        chunks.push(chunk);
        // Some 30 chunks of about 250 characters are past the 4 KiB the flight may hold: a client now comes.
        if (++leaderChunks === 30) late = streamed(t.openai, body);
      }
      return { chunks, headers: response.headers };
    })();
    await until(() => gw.fake.calls.count === 1, 'the call upstream');
    const [first, joined] = await Promise.all([leader, streamed(t.openai, body)]);
    const came = await late!;

    assert.equal(textOf(first.chunks), text);
    assert.equal(joined.headers.get('x-gateway-cache'), 'dedup', 'a stream open before the flight dropped its start shares it');
    assert.equal(textOf(joined.chunks), text, 'and gets every chunk, live');
    assert.equal(came.headers.get('x-gateway-cache'), 'miss', 'a client coming after the start was dropped does not join');
    assert.equal(textOf(came.chunks), text, 'it makes its own call and gets the whole answer');
    assert.equal(gw.fake.calls.count, 2, 'one call for the leader and the open stream, one for the late client');
    const again = await streamed(t.openai, body);
    assert.equal(again.headers.get('x-gateway-cache'), 'miss', 'an answer over the entry limit is not stored');
  });

  test('a client waiting for the whole answer of a stream that passes the entry limit makes its own call then, and gets its answer', async () => {
    await fresh();
    const text = words(100, 'v');
    gw.fake.setBehaviour({ latencyMs: 400, chunkDelayMs: 20, chunks: 100, text });
    const leader = streamed(t.openai, { ...ask('a long answer, whole'), stream: true });
    await until(() => gw.fake.calls.count === 1, 'the call upstream');
    const whole = await t.openai.chat.completions.create(ask('a long answer, whole')).withResponse();
    assert.equal(whole.response.headers.get('x-gateway-cache'), 'miss', 'it did not get the answer from the flight');
    assert.equal(whole.data.choices[0]?.message.content, text);
    assert.equal(textOf((await leader).chunks), text);
    assert.equal(gw.fake.calls.count, 2);
  });

  test('a client sharing a stream that stops reading is cut off with client_too_slow (408 in its record); the others get the whole stream', async () => {
    await fresh();
    gw.fake.setBehaviour({ latencyMs: 300, flood: { bytes: 48 * MiB } }, { requests: 1 });
    const leader = rawStream(gw, t.apiKey, 'share a flood');
    await until(() => gw.fake.calls.count === 1, 'the call upstream');
    const slow = rawStream(gw, t.apiKey, 'share a flood');
    (await slow.opened).pause();
    const led = await leader.ended;
    assert.equal(led.status, 200);
    assert.ok(led.tail.endsWith('data: [DONE]\n\n'), 'the leader got the whole stream');
    slow.resume();
    const cut = await slow.ended;
    assert.match(cut.tail, /"code":"client_too_slow"/, 'the slow client reads what was buffered for it, then why it was cut off');
    const record = await usageRecord(gw, cut.requestId);
    assert.deepEqual([record.status, record.error_code, record.cache_status], [408, 'client_too_slow', 'dedup']);
    assert.equal(gw.fake.calls.count, 1);
  });

  test('an upstream SSE line over the bound: 502 upstream_event_too_large before the stream opened, an error event after', async () => {
    await fresh();
    gw.fake.setBehaviour({ flood: { bytes: 32 * MiB, shape: 'line', head: false, end: 'cut' } }, { requests: 1 });
    const before = await rawPost(gw, t.apiKey, JSON.stringify({ ...ask('an endless line first'), stream: true }));
    assert.equal(before.status, 502, before.text);
    assert.equal(JSON.parse(before.text).error.code, 'upstream_event_too_large');

    gw.fake.setBehaviour({ flood: { bytes: 32 * MiB, shape: 'event', pieceBytes: 1024, end: 'cut' } }, { requests: 1 });
    const during = await rawStream(gw, t.apiKey, 'an endless event after the head').ended;
    assert.equal(during.status, 200);
    assert.match(during.tail, /data: \{"error":\{.*"code":"upstream_event_too_large"/);
    await until(() => gw.fake.calls.aborted === 2, 'both upstream bodies given up at the bound');
  });

  test('a non-streamed answer over GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES is refused with 502 upstream_response_too_large', async () => {
    await fresh();
    gw.fake.setBehaviour({ text: 'x'.repeat(30_000) }, { requests: 1 });
    const fits = await t.openai.chat.completions.create(ask('a big answer')).withResponse();
    assert.equal(fits.data.choices[0]?.message.content?.length, 30_000);
    gw.fake.setBehaviour({ text: 'y'.repeat(100_000) }, { requests: 1 });
    const err = await t.openai.chat.completions.create(ask('a bigger answer')).catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 502);
    assert.equal((err as { code?: string }).code, 'upstream_response_too_large');
    assert.match(err.message, /larger than 65536 bytes/);
  });
});
