import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Reply } from './answer.ts';
import { errorAnswer } from './faults.ts';
import type { OpenAIContext } from './openai.ts';
import { openAiKeyRefusal } from './openai-auth.ts';

/**
 * OpenAI embeddings (API reference: "Create embeddings", "The embedding
 * object"). Each vector is a function of its input alone (a SHA-256 of the
 * text, or of the token array, seeds a generator), unit length and made of
 * float32 values, so a cached answer equals a fresh one to the bit and the
 * base64 form (little-endian float32 bytes) decodes to the float form.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };
const DEFAULT_DIMENSIONS = 8;
/** OpenAI's limits: 2048 inputs per request; the largest model has 3072 dimensions. */
const MAX_INPUTS = 2048;
const MAX_DIMENSIONS = 3072;

type Body = Record<string, unknown>;

export function createEmbeddings(body: Body, headers: IncomingHttpHeaders, ctx: OpenAIContext): Reply {
  const fail = (message: string, param: string): Reply => ({ kind: 'answer', answer: errorAnswer('openai', 'invalid_request', ctx.requestId, message, param) });
  const refusal = openAiKeyRefusal(headers, ctx.apiKey, ctx.requestId);
  if (refusal) return { kind: 'answer', answer: refusal };
  if (typeof body['model'] !== 'string') return fail('you must provide a model parameter', 'model');
  const inputs = inputsOf(body['input']);
  if (inputs === undefined) return fail("'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", 'input');
  const dimensions = body['dimensions'] ?? DEFAULT_DIMENSIONS;
  if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1 || dimensions > MAX_DIMENSIONS) {
    return fail(`Invalid 'dimensions': expected a whole number from 1 to ${MAX_DIMENSIONS}.`, 'dimensions');
  }
  const format = body['encoding_format'] ?? 'float';
  if (format !== 'float' && format !== 'base64') return fail("Invalid value for 'encoding_format': expected 'float' or 'base64'.", 'encoding_format');

  const b = ctx.behaviour;
  // Text inputs count about a quarter of their length in tokens, token arrays their length.
  const counted = inputs.reduce((sum, input) => sum + (typeof input === 'string' ? Math.max(1, Math.ceil(input.length / 4)) : input.length), 0);
  const promptTokens = b.promptTokens ?? counted;
  ctx.bill?.(body['model'], { promptTokens, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 });
  const data = inputs.map((input, index) => {
    const vector = embed(typeof input === 'string' ? `t:${input}` : `k:${input.join(',')}`, dimensions);
    return { object: 'embedding', index, embedding: format === 'float' ? Array.from(vector) : Buffer.from(vector.buffer).toString('base64') };
  });
  const answer = { object: 'list', data, model: body['model'], usage: { prompt_tokens: promptTokens, total_tokens: promptTokens, ...b.usageFields } };
  return { kind: 'answer', answer: { status: 200, headers: { ...JSON_HEADERS, 'x-request-id': ctx.requestId }, body: JSON.stringify(answer) } };
}

/** The inputs as a list of texts or token arrays; undefined when the shape is not one OpenAI takes (empty strings and lists included). */
function inputsOf(input: unknown): (string | number[])[] | undefined {
  const isTokens = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t) && t >= 0);
  if (typeof input === 'string') return input === '' ? undefined : [input];
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_INPUTS) return undefined;
  if (isTokens(input)) return [input];
  return input.every((v) => (typeof v === 'string' && v !== '') || isTokens(v)) ? (input as (string | number[])[]) : undefined;
}

/** A unit vector of float32s seeded by `key` (xorshift32 from the first 4 bytes of its SHA-256). */
function embed(key: string, dimensions: number): Float32Array {
  let state = createHash('sha256').update(key).digest().readUInt32LE(0) || 1;
  const out = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const v = (state >>> 0) / 2 ** 31 - 1;
    out[i] = v;
    norm += v * v;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dimensions; i++) out[i] = out[i]! * scale;
  return out;
}
