import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adapterFor } from '../../../../src/gateway/providers/adapters.ts';
import { findProvider } from '../../../../src/gateway/providers/registry.ts';
import type { CallTarget } from '../../../../src/gateway/pipeline/call.ts';
import { shareOut } from '../../../../src/gateway/surfaces/embeddings/input-cache.ts';
import { decodeEmbeddings } from '../../../../src/gateway/surfaces/embeddings/request.ts';
import { EmbeddingsSurface } from '../../../../src/gateway/surfaces/embeddings/surface.ts';
import { answerBytes, base64Of, floatsOf, floatText, upstreamVector } from '../../../../src/gateway/surfaces/embeddings/vectors.ts';

const floats = Float32Array.from([0.1, -2.5, 3.25e-7, 1e30, -0]);
const base64 = Buffer.from(floats.buffer).toString('base64');

describe('embedding vectors: float and base64 as OpenAI writes them', () => {
  test("base64 is the little-endian float32 bytes, both ways, as the OpenAI SDK's decoder reads them", () => {
    assert.equal(base64Of(floats), base64);
    assert.deepEqual(floatsOf(base64), floats);
    const bytes = Buffer.from(base64, 'base64');
    assert.equal(bytes.readFloatLE(4), -2.5);
  });

  test('the float text is what JSON.stringify writes for the float32 values; NaN and infinities are null', () => {
    assert.equal(floatText(base64), JSON.stringify(Array.from(floats)));
    const odd = base64Of(Float32Array.from([Number.NaN, Number.POSITIVE_INFINITY, 1]));
    assert.equal(floatText(odd), '[null,null,1]');
  });

  test('an upstream vector: base64 of whole float32 values, or a float array narrowed to float32; anything else refused', () => {
    assert.equal(upstreamVector(base64), base64);
    assert.equal(upstreamVector([0.1, -2.5]), base64Of(Float32Array.from([0.1, -2.5])));
    const notVectors = [
      '',
      'AAAA', // 3 bytes: not a whole float32
      'AAAAAA==', // 4 bytes, valid
      'AA=A',
      'AAA*',
      `${base64}!`,
      [],
      [1, '2'],
      [null],
      { embedding: [1] },
      7,
    ];
    assert.deepEqual(
      notVectors.map((v) => upstreamVector(v) !== undefined),
      [false, false, true, false, false, false, false, false, false, false, false],
    );
    // Linear whatever the text: a long run of valid characters ending in a bad one is refused at once.
    const started = performance.now();
    assert.equal(upstreamVector(`${'A'.repeat(4_000_000)}AAA*`), undefined);
    assert.ok(performance.now() - started < 1000);
  });

  test('the answer: OpenAI\'s list, each vector at its index, in the encoding asked for', () => {
    const two = [base64, base64Of(Float32Array.from([1, 2]))];
    assert.deepEqual(JSON.parse(answerBytes(two, 'float', 'm', 7).toString()), {
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: JSON.parse(JSON.stringify(Array.from(floats))) },
        { object: 'embedding', index: 1, embedding: [1, 2] },
      ],
      model: 'm',
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
    const b64 = JSON.parse(answerBytes(two, 'base64', 'a "model" é', 0).toString());
    assert.deepEqual(
      b64.data.map((d: { embedding: string }) => d.embedding),
      two,
    );
    assert.equal(b64.model, 'a "model" é', 'the one part that may not be ASCII, as UTF-8');
  });

  test('tokens shared out by length: whole numbers that add up to the count, each within one of its part', () => {
    assert.deepEqual(shareOut(15, [40, 20]), [10, 5]);
    assert.deepEqual(shareOut(0, [3, 4]), [0, 0]);
    assert.deepEqual(shareOut(3, [0, 0, 0]), [1, 1, 1], 'an empty text counts as one character');
    const weights = Array.from({ length: 2048 }, (_, i) => (i * 7919) % 113);
    const shares = shareOut(1_000_003, weights);
    assert.equal(
      shares.reduce((a, b) => a + b, 0),
      1_000_003,
    );
    const sum = weights.reduce((a, w) => a + Math.max(1, w), 0);
    for (const [k, s] of shares.entries()) assert.ok(Math.abs(s - (1_000_003 * Math.max(1, weights[k]!)) / sum) <= 1);
  });
});

describe("the embeddings surface's adapter reads an upstream answer strictly", () => {
  const provider = findProvider('openai')!;
  const target = { provider, adapter: adapterFor(provider, { anthropicDefaultMaxTokens: 1024 }) } as unknown as CallTarget;
  const ctx = { model: 'text-embedding-3-small', apiKey: 'sk-x', baseUrl: new URL('https://api.example/v1'), requestId: 'r', created: 0 };
  const surfaceOf = (input: unknown, sending?: number[]) => {
    const surface = new EmbeddingsSurface(decodeEmbeddings({ model: 'text-embedding-3-small', input, user: 'u', input_type: 'query' }));
    surface.sending = sending;
    return surface;
  };
  const answer = (data: unknown[], usage: unknown = { prompt_tokens: 3, total_tokens: 3 }) => Buffer.from(JSON.stringify({ object: 'list', data, model: 'm-1', usage }));
  const item = (index: number | undefined, embedding: unknown) => ({ object: 'embedding', ...(index === undefined ? {} : { index }), embedding });

  test('the upstream request: the client\'s fields, only the inputs sent, base64, the provider\'s model, at {base}/embeddings', () => {
    const surface = surfaceOf(['a', 'b', 'c'], [0, 2]);
    const sent = surface.adapter(target).chatRequest({ model: 'x', messages: [] }, ctx);
    assert.equal(sent.path, '/v1/embeddings');
    assert.equal(sent.headers['authorization'], 'Bearer sk-x');
    assert.deepEqual(JSON.parse(sent.body), { model: 'text-embedding-3-small', input: ['a', 'c'], user: 'u', input_type: 'query', encoding_format: 'base64' });
    const all = surfaceOf('just one').adapter(target).chatRequest({ model: 'x', messages: [] }, ctx);
    assert.equal(JSON.parse(all.body).input, 'just one', 'all of it: the client\'s own value');
  });

  test('vectors placed by index, or by position without one; usage read; the model named', () => {
    const surface = surfaceOf(['a', 'b']);
    const result = surface.adapter(target).chatResponse(200, answer([item(1, base64), item(0, [1, 2])]), ctx);
    assert.deepEqual(surface.received, [base64Of(Float32Array.from([1, 2])), base64]);
    assert.deepEqual(result.usage, { promptTokens: 3, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 });
    assert.equal(result.model, 'm-1');
    const positional = surfaceOf(['a', 'b']);
    positional.adapter(target).chatResponse(200, answer([item(undefined, base64), item(undefined, [1])]), ctx);
    assert.equal(positional.received![0], base64);
    const unreported = surfaceOf('a');
    assert.equal(unreported.adapter(target).chatResponse(200, answer([item(0, base64)], null), ctx).usage, undefined);
  });

  test('a vector missing, twice, out of range or not a vector, or no data: 502 upstream_invalid_response, nothing kept', () => {
    const bad = [
      answer([item(0, base64)]),
      answer([item(0, base64), item(0, base64)]),
      answer([item(0, base64), item(2, base64)]),
      answer([item(0, base64), item(1, 'AAA')]),
      answer([item(0, base64), item(1.5, base64)]),
      answer([item(0, base64), 'x']),
      Buffer.from('{"object":"list"}'),
      Buffer.from('not json'),
    ];
    for (const body of bad) {
      const surface = surfaceOf(['a', 'b']);
      assert.throws(
        () => surface.adapter(target).chatResponse(200, body, ctx),
        (err: { status?: number; code?: string }) => err.status === 502 && err.code === 'upstream_invalid_response',
        body.toString().slice(0, 80),
      );
      assert.equal(surface.received, undefined);
    }
  });
});
