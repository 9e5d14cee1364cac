import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { openAiCompatibleAdapter } from '../../../src/gateway/providers/openai-compatible/index.ts';
import type { CallContext, StreamOptions, TokenUsage } from '../../../src/gateway/providers/types.ts';
import { cut, run } from '../../helpers/byte-cuts.ts';

const adapter = openAiCompatibleAdapter({ name: 'OpenAI' });
const ctx: CallContext = {
  model: 'gpt-4o',
  apiKey: 'sk-test',
  baseUrl: new URL('https://api.openai.com/v1'),
  requestId: 'r1',
  created: 1_750_000_000,
};

const head = '{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8",';
/** A streamed answer as OpenAI sends it when include_usage is set (usage null on every chunk, then a usage-only chunk). */
const CHUNKS = [
  `${head}"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `${head}"choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `${head}"choices":[{"index":0,"delta":{"content":" wörld 🌍, \\"usage\\": {}"},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `${head}"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
];
const USAGE_CHUNK = `${head}"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`;
const RECORDED = Buffer.from(`${[...CHUNKS, USAGE_CHUNK].map((c) => `data: ${c}\n\n`).join('')}data: [DONE]\n\n`);
const USAGE: TokenUsage = { promptTokens: 19, cachedTokens: 3, cacheWriteTokens: 0, completionTokens: 10, reasoningTokens: 2 };

const noUsage: StreamOptions = { includeUsage: false, cost: () => 0.5 };
const withUsage: StreamOptions = { includeUsage: true, cost: (u) => u.promptTokens * 0.001 };

describe('OpenAI-compatible stream', () => {
  test('chunks pass through unchanged; the usage-only chunk is dropped when the client did not ask', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    const out = run(stream, [RECORDED]);
    assert.equal(out, `${CHUNKS.map((c) => `data: ${c}\n\n`).join('')}data: [DONE]\n\n`);
    assert.deepEqual(stream.usage, USAGE);
    assert.equal(stream.model, 'gpt-4o-2024-08-06');
    assert.equal(stream.error, undefined);
  });

  test('when the client asked, the usage chunk is forwarded with usage.cost', () => {
    const stream = adapter.chatStream(ctx, withUsage);
    const out = run(stream, [RECORDED]);
    const usageChunk = JSON.parse(USAGE_CHUNK);
    usageChunk.usage.cost = 0.019;
    assert.equal(out, `${CHUNKS.map((c) => `data: ${c}\n\n`).join('')}data: ${JSON.stringify(usageChunk)}\n\ndata: [DONE]\n\n`);
    assert.deepEqual(stream.usage, USAGE);
  });

  test('no cost known: the usage chunk is forwarded unchanged', () => {
    const out = run(adapter.chatStream(ctx, { includeUsage: true, cost: () => undefined }), [RECORDED]);
    assert.ok(out.includes(`data: ${USAGE_CHUNK}\n\n`));
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
        fc.property(fc.array(fc.integer({ min: 1, max: RECORDED.length - 1 }), { maxLength: 60 }), (offsets) => {
          const stream = adapter.chatStream(ctx, options);
          assert.equal(run(stream, cut(RECORDED, offsets)), whole);
          assert.deepEqual(stream.usage, USAGE);
        }),
        { numRuns: 300 },
      );
    }
  });

  test('CRLF framing from the provider is re-framed with LF', () => {
    const crlf = Buffer.from(RECORDED.toString().replaceAll('\n', '\r\n'));
    assert.equal(run(adapter.chatStream(ctx, noUsage), [crlf]), run(adapter.chatStream(ctx, noUsage), [RECORDED]));
  });

  test('usage on a chunk with choices (vLLM, Together) is read and the chunk kept', () => {
    const chunk = `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`;
    const stream = adapter.chatStream(ctx, noUsage);
    assert.equal(run(stream, [Buffer.from(`data: ${chunk}\n\ndata: [DONE]\n\n`)]), `data: ${chunk}\n\ndata: [DONE]\n\n`);
    assert.equal(stream.usage?.promptTokens, 4);
  });

  test('Mistral: usage in the last chunk with choices, read; forwarded with cost when asked', () => {
    const chunk = '{"id":"cmpl-e5cc70bb28c444948073e77776eb30ef","object":"chat.completion.chunk","created":1702256327,"model":"mistral-large-latest","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":10,"total_tokens":25,"completion_tokens":15}}';
    const input = Buffer.from(`data: ${chunk}\n\ndata: [DONE]\n\n`);
    const plain = adapter.chatStream(ctx, noUsage);
    assert.equal(run(plain, [input]), `data: ${chunk}\n\ndata: [DONE]\n\n`);
    assert.equal(plain.usage?.completionTokens, 15);
    const priced = adapter.chatStream(ctx, withUsage);
    assert.match(run(priced, [input]), /"usage":\{"prompt_tokens":10,"total_tokens":25,"completion_tokens":15,"cost":0.01\}/);
  });

  test('empty data events and named events other than error are skipped', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    const out = run(stream, [Buffer.from(`data:\n\nevent: ping\ndata: {}\n\n: OPENROUTER PROCESSING\n\ndata: ${CHUNKS[0]}\n\ndata: [DONE]\n\n`)]);
    assert.equal(out, `data: ${CHUNKS[0]}\n\ndata: [DONE]\n\n`);
  });

  test('Groq usage under x_groq is read', () => {
    const chunk = `{"id":"x","object":"chat.completion.chunk","model":"llama","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"x_groq":{"id":"req_1","usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}}`;
    const stream = adapter.chatStream(ctx, noUsage);
    run(stream, [Buffer.from(`data: ${chunk}\n\ndata: [DONE]\n\n`)]);
    assert.equal(stream.usage?.completionTokens, 3);
  });

  test('an error event mid-stream is forwarded once, in the OpenAI shape, and ends the stream without [DONE]', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    const error = '{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}';
    const out = run(stream, [Buffer.from(`data: ${CHUNKS[0]}\n\ndata: ${error}\n\ndata: ${CHUNKS[1]}\n\ndata: [DONE]\n\n`)]);
    assert.equal(
      out,
      `data: ${CHUNKS[0]}\n\ndata: {"error":{"message":"The server had an error while processing your request.","type":"api_error","code":"upstream_error","param":null}}\n\n`,
    );
    assert.equal(stream.error?.status, 502);
    assert.equal(stream.error?.code, 'upstream_error');
  });

  test('an `event: error` event (as some servers send) ends the stream too', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    const out = run(stream, [Buffer.from(`event: error\ndata: {"message":"Overloaded","code":"overloaded"}\n\n`)]);
    assert.equal(out, 'data: {"error":{"message":"Overloaded","type":"api_error","code":"upstream_error","param":null}}\n\n');
    assert.equal(stream.error?.message, 'Overloaded');
  });

  test('an error with a 4xx code keeps its status and code', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    run(stream, [Buffer.from('data: {"error":{"code":429,"message":"Rate limited upstream"}}\n\n')]);
    assert.equal(stream.error?.status, 429);
    assert.equal(stream.error?.code, 'upstream_rate_limited');
  });

  test('a body ended before [DONE] ends with upstream_stream_incomplete', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    const partial = RECORDED.subarray(0, RECORDED.indexOf('data: [DONE]'));
    const out = run(stream, [partial]);
    assert.ok(out.endsWith(
      'data: {"error":{"message":"The OpenAI API stream ended before the answer was complete.","type":"api_error","code":"upstream_stream_incomplete","param":null}}\n\n',
    ));
    assert.ok(!out.includes('[DONE]'));
    assert.equal(stream.error?.code, 'upstream_stream_incomplete');
    assert.equal(stream.error?.status, 502);
    assert.deepEqual(stream.usage, USAGE);
  });

  test('an empty body is incomplete too', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    assert.match(run(stream, []), /upstream_stream_incomplete/);
  });

  test('fail() ends the stream with the given error once; later pushes are ignored', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    assert.equal(stream.push(Buffer.from(`data: ${CHUNKS[0]}\n\n`)), `data: ${CHUNKS[0]}\n\n`);
    const timeout = new HttpProblem(504, 'upstream_timeout', 'The OpenAI API did not answer in time.', { type: 'api_error' });
    assert.equal(
      stream.fail(timeout),
      'data: {"error":{"message":"The OpenAI API did not answer in time.","type":"api_error","code":"upstream_timeout","param":null}}\n\n',
    );
    assert.equal(stream.error, timeout);
    assert.equal(stream.push(Buffer.from(`data: ${CHUNKS[1]}\n\n`)), '');
    assert.equal(stream.end(), '');
    assert.equal(stream.fail(timeout), '');
  });

  test('anything after [DONE] is ignored', () => {
    const stream = adapter.chatStream(ctx, noUsage);
    assert.equal(run(stream, [Buffer.from('data: [DONE]\n\n'), Buffer.from(`data: ${CHUNKS[0]}\n\n`)]), 'data: [DONE]\n\n');
    assert.equal(stream.error, undefined);
  });

  for (const garbage of ['data: not json\n\n', 'data: {"id":\n\n', '<html>\n\n']) {
    test(`garbage (${JSON.stringify(garbage)}) ends the stream with upstream_invalid_response`, () => {
      const stream = adapter.chatStream(ctx, noUsage);
      const out = run(stream, [Buffer.from(garbage)]);
      if (garbage.startsWith('data')) {
        assert.equal(stream.error?.code, 'upstream_invalid_response');
        assert.match(out, /upstream_invalid_response/);
      } else {
        // Not SSE at all: no event is ever dispatched, so the stream is incomplete.
        assert.equal(stream.error?.code, 'upstream_stream_incomplete');
      }
    });
  }
});
