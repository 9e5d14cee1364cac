import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { messageFromChat } from '../../../../src/gateway/surfaces/messages/from-chat.ts';
import { cut } from '../../../helpers/byte-cuts.ts';
import { COMPLETION, RECORDED, translator } from './stream-fixtures.ts';

/**
 * The real client: the official SDK's stream helper reads MessagesFromChat's
 * output over HTTP, and its final message must be what messageFromChat makes
 * of the same answer whole. The server writes the translation piece by piece,
 * as the surface would while the provider's bytes arrive.
 */
let server: Server;
let client: Anthropic;
/** The provider bytes the next request is answered from. */
let upstream: Buffer[] = [];

before(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_test' });
      const stream = translator();
      for (const piece of upstream) {
        const out = stream.push(piece);
        if (out !== '') res.write(out);
        await new Promise((resolve) => setImmediate(resolve));
      }
      res.end(stream.end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = new Anthropic({ apiKey: 'sk-gw-test', baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const params = { model: 'gpt-4.1', max_tokens: 1024, messages: [{ role: 'user' as const, content: 'Read a.txt and b.txt' }] };

describe('MessagesFromChat read by @anthropic-ai/sdk', () => {
  test("the SDK's final message equals the non-streamed translation of the same answer", async () => {
    const offsets = [];
    for (let i = 7; i < RECORDED.length; i += 37) offsets.push(i);
    upstream = cut(RECORDED, offsets);
    const stream = client.messages.stream(params);
    const texts: string[] = [];
    stream.on('text', (text) => texts.push(text));
    const final = await stream.finalMessage();
    const expected = JSON.parse(messageFromChat(COMPLETION, { provider: 'OpenAI', requestId: 'req1' }));
    // parsed_output is the SDK's own (its structured-output helper), not read off the wire.
    const { parsed_output, ...received } = JSON.parse(JSON.stringify(final));
    assert.equal(parsed_output, null);
    assert.deepEqual(received, expected);
    assert.equal(texts.join(''), 'Reading both. ü 🌍');
    assert.deepEqual(
      final.content.map((block) => block.type),
      ['thinking', 'text', 'tool_use', 'tool_use'],
    );
    assert.equal(final.stop_reason, 'tool_use');
    assert.deepEqual(final.usage.input_tokens, 176);
  });

  test('an error mid-stream raises the SDK APIError with the Anthropic error type', async () => {
    const head = '{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":';
    upstream = [Buffer.from(`data: ${head}{"content":"Hel"},"finish_reason":null}]}\n\ndata: {"error":{"code":429,"message":"Rate limited upstream"}}\n\n`)];
    const stream = client.messages.stream(params);
    await assert.rejects(stream.finalMessage(), (err: unknown) => {
      assert.ok(err instanceof APIError);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limited upstream' } });
      return true;
    });
  });
});
