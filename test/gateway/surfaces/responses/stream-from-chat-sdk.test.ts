import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIError } from 'openai';
import { sseOfResponse } from '../../../../src/gateway/surfaces/responses/events.ts';
import { responseFromChat } from '../../../../src/gateway/surfaces/responses/from-chat.ts';
import { cut } from '../../../helpers/byte-cuts.ts';
import { COMPLETION, CTX, EXPECTED_RESPONSE, RECORDED, translator } from './stream-fixtures.ts';

/**
 * The real client: the official SDK's responses.stream() reads
 * ResponsesFromChat's output over HTTP, and its final response must be what
 * responseFromChat makes of the same answer whole. The server writes the
 * translation piece by piece, as the surface would while the provider's
 * bytes arrive; or, for a replay, the whole stream of a complete response.
 */
let server: Server;
let client: OpenAI;
/** The provider bytes the next request is answered from; or a complete response to replay. */
let upstream: Buffer[] = [];
let replay: Record<string, unknown> | undefined;

before(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'req_test' });
      if (replay !== undefined) {
        res.end(sseOfResponse(replay));
        return;
      }
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
  client = new OpenAI({ apiKey: 'sk-gw-test', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

const params = { model: 'deepseek/deepseek-chat', input: 'Read a.txt and b.txt', instructions: 'Be brief.' };

/** The final response without what the SDK adds of its own (output_text, and `parsed` fields of its structured-output helpers). */
function wire(response: unknown): Record<string, unknown> {
  const { output_text, output_parsed, output, ...rest } = JSON.parse(JSON.stringify(response));
  assert.equal(output_parsed, null);
  assert.equal(typeof output_text, 'string');
  const items = (output as Record<string, unknown>[]).map(({ parsed_arguments, ...item }) => {
    if (!Array.isArray(item['content'])) return item;
    return { ...item, content: (item['content'] as Record<string, unknown>[]).map(({ parsed, ...part }) => part) };
  });
  return { ...rest, output: items };
}

describe('ResponsesFromChat read by the openai SDK', () => {
  test("responses.stream(): the events' snapshots build up the answer, and finalResponse() equals the whole translation", async () => {
    replay = undefined;
    const offsets = [];
    for (let i = 5; i < RECORDED.length; i += 41) offsets.push(i);
    upstream = cut(RECORDED, offsets);
    const stream = client.responses.stream(params);
    const types: string[] = [];
    let text = '';
    let args = '';
    stream.on('event', (event) => types.push(event.type));
    stream.on('response.output_text.delta', (event) => {
      text = event.snapshot;
    });
    stream.on('response.function_call_arguments.delta', (event) => {
      args = event.snapshot;
    });
    const final = await stream.finalResponse();
    assert.deepEqual(wire(final), responseFromChat(COMPLETION, CTX));
    assert.deepEqual(wire(final), EXPECTED_RESPONSE);
    assert.equal(final.output_text, 'Reading both. ü 🌍');
    assert.equal(text, 'Reading both. ü 🌍');
    assert.equal(args, '{"file_path":"b.txt"}');
    assert.equal(types[0], 'response.created');
    assert.equal(types[types.length - 1], 'response.completed');
    assert.equal(types.length, 26);
  });

  test('a replayed complete response (sseOfResponse) reads the same', async () => {
    replay = responseFromChat(COMPLETION, CTX);
    const final = await client.responses.stream(params).finalResponse();
    assert.deepEqual(wire(final), EXPECTED_RESPONSE);
  });

  test("a replay of OpenAI's own items (web search, encrypted reasoning with text, annotations, a namespaced call) reads the same", async () => {
    const response = {
      ...EXPECTED_RESPONSE,
      output: [
        { id: 'ws_1', type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'weather' } },
        {
          id: 'rs_1',
          type: 'reasoning',
          summary: [
            { type: 'summary_text', text: 'First.' },
            { type: 'summary_text', text: 'Second.' },
          ],
          content: [{ type: 'reasoning_text', text: 'Thinking.' }],
          encrypted_content: 'gAAAAB',
        },
        {
          id: 'msg_1',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [
            { type: 'output_text', text: 'Sunny.', annotations: [{ type: 'url_citation', start_index: 0, end_index: 6, url: 'https://e.com', title: 'E' }], logprobs: [] },
          ],
        },
        { id: 'fc_1', type: 'function_call', status: 'completed', call_id: 'call_1', name: 'stat', namespace: 'fs', arguments: '' },
      ],
    };
    replay = response;
    const final = await client.responses.stream(params).finalResponse();
    assert.deepEqual(wire(final), response);
  });

  test('an error mid-stream rejects finalResponse() with an APIError carrying the code, type and message', async () => {
    replay = undefined;
    const head = '{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":';
    upstream = [Buffer.from(`data: ${head}{"content":"Hel"},"finish_reason":null}]}\n\ndata: {"error":{"code":429,"message":"Rate limited upstream"}}\n\n`)];
    const stream = client.responses.stream(params);
    await assert.rejects(stream.finalResponse(), (err: unknown) => {
      assert.ok(err instanceof APIError);
      assert.equal(err.message, 'Rate limited upstream');
      assert.equal(err.type, 'requests');
      assert.equal(err.code, 'upstream_rate_limited');
      return true;
    });
  });
});
