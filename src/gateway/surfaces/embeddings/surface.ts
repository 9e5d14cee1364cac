import type { AnswerFormat } from '../../cache/answer-formats.ts';
import type { CallTarget } from '../../pipeline/call.ts';
import { upstreamInvalid } from '../../openai-errors.ts';
import { isObject, type JsonObject, parseObject, stringField } from '../../providers/json.ts';
import type { CallContext, ChatResult, ProviderAdapter, TokenUsage, UpstreamRequest } from '../../providers/types.ts';
import { joinPath } from '../../providers/upstream-path.ts';
import { CountReader } from '../../providers/usage-counts.ts';
import type { Surface } from '../surface.ts';
import type { EmbeddingsRequest } from './request.ts';
import { upstreamVector } from './vectors.ts';

const unreachable = (what: string) => (): never => {
  throw new Error(`embeddings answers are never ${what}`);
};

/**
 * The embeddings surface's AnswerFormat, for the Surface type alone: its
 * answers are never streamed, and never stored, shared or replayed whole
 * (the response cache and dedup stages are not in its pipeline; its own
 * cache keeps one entry per input: input-cache.ts). A call of one of these
 * is a bug, answered 500.
 */
const EMBEDDINGS_ANSWERS: AnswerFormat = {
  name: 'embeddings',
  cacheKey: unreachable('cached whole'),
  classify: unreachable('streamed'),
  join: unreachable('streamed'),
  cut: unreachable('streamed'),
  chunkEvent: unreachable('streamed'),
  done: '',
  errorEvent: unreachable('streamed'),
  withCost: unreachable('streamed'),
};

/**
 * OpenAI's embeddings API (POST /v1/embeddings) as an inbound surface, one
 * per call. It holds what its stages and its adapter share: the client's
 * request, the inputs the upstream call carries (the input cache narrows
 * them to those it lacks) and the vectors that came back. Its adapter, for
 * OpenAI-compatible providers only (the model stage refuses others), sends
 * those inputs to `{base}/embeddings` with the client's other fields and
 * `encoding_format: "base64"`, and reads the vectors back as base64; errors
 * are mapped by the provider's own adapter, as chat's are.
 */
export class EmbeddingsSurface implements Surface {
  readonly name = 'embeddings';
  readonly stages = { compaction: false, promptCache: false, cache: false } as const;
  readonly answers = EMBEDDINGS_ANSWERS;
  readonly embeddings: EmbeddingsRequest;
  /** The indexes (into `embeddings.inputs`, increasing) of the inputs the upstream call carries; undefined: all of them. */
  sending: readonly number[] | undefined = undefined;
  /** Once the provider answered: its vectors as base64, one per input sent, in the order sent. */
  received: string[] | undefined = undefined;
  /** The client's answer, once made (input-cache.ts): what serve-call.ts sends, in place of `call.result`. */
  answered: Buffer | undefined = undefined;

  constructor(embeddings: EmbeddingsRequest) {
    this.embeddings = embeddings;
  }

  /** What stored bodies keep: the client's own request. */
  get request(): JsonObject {
    return this.embeddings.body;
  }

  answerBody(): Buffer | undefined {
    return this.answered;
  }

  adapter(target: CallTarget): ProviderAdapter {
    const own = target.adapter;
    const provider = target.provider.name;
    return {
      modelsRequest: own.modelsRequest,
      chatRequest: (_request, ctx) => this.#upstreamRequest(ctx),
      chatResponse: (_status, body) => this.#read(provider, body),
      chatStream: unreachable('streamed'),
      upstreamError: own.upstreamError,
    };
  }

  /** The client's body with `model` the provider's id, `input` what is sent (the client's own value when it is all of it), and base64. */
  #upstreamRequest(ctx: CallContext): UpstreamRequest {
    const { body, inputs } = this.embeddings;
    const sending = this.sending;
    const input = sending === undefined || sending.length === inputs.length ? body['input'] : sending.map((i) => inputs[i]);
    const upstream = { ...body, model: ctx.model, input, encoding_format: 'base64' };
    return {
      path: joinPath(ctx.baseUrl, '/embeddings'),
      headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(upstream),
    };
  }

  /**
   * A 2xx answer: one vector per input sent, placed by its `index` (its
   * position when a server leaves `index` out), each base64 or floats
   * (upstreamVector); `usage.prompt_tokens` as the call's prompt tokens.
   * Anything else is 502 upstream_invalid_response: a vector missing,
   * twice, or not a vector is never answered nor cached.
   */
  #read(provider: string, text: Buffer): ChatResult {
    const answer = parseObject(text.toString('utf8'));
    const data = answer?.['data'];
    const count = this.sending?.length ?? this.embeddings.inputs.length;
    if (answer === undefined || !Array.isArray(data) || data.length !== count) throw upstreamInvalid(provider);
    const vectors = new Array<string>(count);
    for (let k = 0; k < count; k++) {
      const item: unknown = data[k];
      if (!isObject(item)) throw upstreamInvalid(provider);
      const at = item['index'] ?? k;
      const vector = upstreamVector(item['embedding']);
      if (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at >= count || vectors[at] !== undefined || vector === undefined) {
        throw upstreamInvalid(provider);
      }
      vectors[at] = vector;
    }
    this.received = vectors;
    return { body: '', usage: usageOf(answer['usage']), model: stringField(answer, 'model') };
  }
}

/** An embeddings answer's `usage` (prompt tokens alone; an embedding has no output), or undefined when the provider reported none. */
function usageOf(usage: unknown): TokenUsage | undefined {
  if (!isObject(usage)) return undefined;
  const counts = new CountReader();
  const promptTokens = counts.field(usage, 'prompt_tokens');
  const read: TokenUsage = { promptTokens, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 };
  if (counts.clamped) read.clamped = true;
  return read;
}
