import type { JsonObject } from '../../providers/json.ts';
import type { ChatRequest } from '../../providers/types.ts';
import { invalidInput, MAX_INPUTS, tooManyInputs } from './errors.ts';

/** One input to embed: a text, or a list of token ids (OpenAI takes both). */
export type EmbeddingInput = string | readonly number[];

/** A validated embeddings request, as the surface's stages read it. */
export interface EmbeddingsRequest {
  /** The client's body as it came: what goes upstream (its `input` narrowed to what the cache lacks) and what stored bodies keep. */
  body: JsonObject;
  model: string;
  inputs: readonly EmbeddingInput[];
  /** Every input is a text. A request of token arrays is passed through as sent, uncached (the cache keys texts; docs/gateway-cache.md). */
  texts: boolean;
  /** What the client asked its vectors in (OpenAI's default: float); the cache and the upstream call use base64 whatever it asked. */
  encoding: 'float' | 'base64';
  /**
   * The fields that can change a vector, in the body's order: all but
   * `model` (the cache key names the routed model), `input` (each input is
   * keyed alone), `encoding_format` (one form is kept) and `user`. Fields
   * the gateway does not know are kept in the key (a provider's own
   * `input_type` changes the vector).
   */
  keyed: JsonObject;
}

const UNKEYED = new Set(['model', 'input', 'encoding_format', 'user']);

const isTokenId = (value: unknown) => typeof value === 'number' && Number.isInteger(value) && value >= 0;

/** A non-empty array of token ids (checked whole: linear in its length). */
function isTokens(value: unknown): value is number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const token of value) if (!isTokenId(token)) return false;
  return true;
}

/**
 * The inputs of `input`, in one of OpenAI's four shapes: a string, an array
 * of strings, an array of token ids (one input), an array of token-id
 * arrays. At most MAX_INPUTS inputs; a shape beside these, or a mix of
 * them, is a 400 naming `input`. An empty string is the provider's to judge.
 */
function inputsOf(input: unknown): { inputs: EmbeddingInput[]; texts: boolean } {
  if (typeof input === 'string') return { inputs: [input], texts: true };
  if (!Array.isArray(input) || input.length === 0) throw invalidInput();
  const first: unknown = input[0];
  if (typeof first === 'number') {
    if (!isTokens(input)) throw invalidInput();
    return { inputs: [input], texts: false };
  }
  if (input.length > MAX_INPUTS) throw tooManyInputs(input.length);
  if (typeof first === 'string') {
    for (const item of input) if (typeof item !== 'string') throw invalidInput();
    return { inputs: input as string[], texts: true };
  }
  for (const item of input) if (!isTokens(item)) throw invalidInput();
  return { inputs: input as number[][], texts: false };
}

/** A body the route's schema accepted (model a string, encoding_format float or base64 if set), decoded; throws a 400 for a bad `input`. */
export function decodeEmbeddings(body: JsonObject): EmbeddingsRequest {
  const { inputs, texts } = inputsOf(body['input']);
  const keyed: JsonObject = {};
  for (const name of Object.keys(body)) if (!UNKEYED.has(name)) keyed[name] = body[name];
  return { body, model: body['model'] as string, inputs, texts, encoding: body['encoding_format'] === 'base64' ? 'base64' : 'float', keyed };
}

/**
 * The request in the stages' form (a chat request), for the stages that
 * read one: the budgets' estimate counts the inputs as prompt text (token
 * arrays by their JSON, which leans high), and one output token, the least
 * it takes (an embedding has none). Nothing is sent in this form.
 */
export function stagesForm(request: EmbeddingsRequest): ChatRequest {
  const parts = request.inputs.map((input) => (typeof input === 'string' ? { type: 'text', text: input } : { type: 'input_tokens', tokens: input }));
  return { model: request.model, messages: [{ role: 'user', content: parts }], max_completion_tokens: 1 };
}
