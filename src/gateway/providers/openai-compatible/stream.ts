
import { upstreamInvalid } from '../../openai-errors.ts';
import { RelayedStream } from '../relayed-stream.ts';
import { isObject, parseObject } from '../json.ts';
import { SSE_DONE, sseEvent } from '../sse.ts';
import type { StreamOptions, } from '../types.ts';
import { upstreamHttpError, } from '../upstream-errors.ts';
import { openAiErrorFields } from './errors.ts';
import { errorStatus } from './response.ts';
import { openAiUsage } from './usage.ts';

/**
 * An OpenAI-compatible stream, relayed. Each upstream event's data is
 * written on as it came (re-framed, never re-serialized), except:
 * - the chunk carrying `usage` is read for cost; the usage-only chunk
 *   (`choices: []`, sent because the gateway always asks for usage) is
 *   dropped unless the client asked for it, and gets `usage.cost` if it did;
 * - `data: [DONE]` ends the stream; anything after it is ignored;
 * - an error event (`data: {"error": ...}` or `event: error`) is recorded
 *   and forwarded as one OpenAI-shaped error event, and ends the stream;
 * - a body that ends before [DONE] ends with an `upstream_stream_incomplete` error event;
 * - empty events and named events other than `error` are skipped.
 * - a chunk that is not a JSON object ends the stream with an
 *   `upstream_invalid_response` error event.
 * Each chunk is parsed once (about a microsecond for a chunk of a few hundred
 * bytes); what is written on is the upstream's own text. The length of the
 * text its deltas carry is counted, for a stream that ends without usage.
 */
export class OpenAiCompatibleStream extends RelayedStream {
  readonly #options: StreamOptions;
  #sawChunk = false;

  constructor(provider: string, options: StreamOptions) {
    super(provider);
    this.#options = options;
  }

  protected readonly onEvent = (event: string, data: string): void => {
    // Chunks are unnamed events; empty data and other names (pings some servers send) are not chunks.
    if (this.finished || data === '' || (event !== 'message' && event !== 'error')) return;
    if (data === '[DONE]') {
      this.finished = true;
      this.out += SSE_DONE;
      return;
    }
    // Every chunk is parsed once: a chunk that is not a JSON object (a truncated or garbled
    // event) ends the stream with an error rather than reaching the client's JSON parser.
    const parsed = data.charCodeAt(0) === 123 /* { */ ? parseObject(data) : undefined;
    if (parsed === undefined) {
      this.stop(upstreamInvalid(this.provider));
      return;
    }
    if (event === 'error' || parsed['error'] !== undefined) {
      const inner = isObject(parsed['error']) ? parsed['error'] : {};
      this.stop(upstreamHttpError(this.provider, errorStatus(inner, 502), openAiErrorFields(parsed), {}));
      return;
    }
    if (!this.#sawChunk) {
      this.#sawChunk = true;
      if (typeof parsed['model'] === 'string') this.reportedModel = parsed['model'];
    }
    this.#count(parsed['choices']);
    if (isObject(parsed['usage']) || isObject(parsed['x_groq'])) this.#usageChunk(data, parsed);
    else this.out += sseEvent(data);
  };

  /** A chunk with a `usage` object: recorded; forwarded, dropped or given its cost as the client asked. */
  #usageChunk(data: string, parsed: Record<string, unknown>): void {
    const usage = isObject(parsed['usage']) ? parsed['usage'] : undefined;
    const xGroq = parsed['x_groq'];
    const reported = openAiUsage(usage ?? (isObject(xGroq) ? xGroq['usage'] : undefined));
    if (reported !== undefined) {
      this.reportedUsage = reported;
      this.usageFinal = true;
    }
    const choices = parsed['choices'];
    const usageOnly = Array.isArray(choices) && choices.length === 0;
    if (!this.#options.includeUsage) {
      if (!usageOnly) this.out += sseEvent(data);
      return;
    }
    const cost = usage !== undefined && this.reportedUsage !== undefined ? this.#options.cost(this.reportedUsage) : undefined;
    if (cost === undefined || usage === undefined) {
      this.out += sseEvent(data);
      return;
    }
    usage['cost'] = cost;
    this.out += sseEvent(JSON.stringify(parsed));
  }

  /** The generated text of a chunk's deltas, every choice: content, reasoning (DeepSeek's and OpenRouter's fields), refusal, tool-call arguments. */
  #count(choices: unknown): void {
    if (!Array.isArray(choices)) return;
    for (const choice of choices) {
      const delta = isObject(choice) ? choice['delta'] : undefined;
      if (!isObject(delta)) continue;
      this.generated(delta['content']);
      this.generated(delta['reasoning_content'] ?? delta['reasoning']);
      this.generated(delta['refusal']);
      const calls = delta['tool_calls'];
      if (!Array.isArray(calls)) continue;
      for (const call of calls) if (isObject(call) && isObject(call['function'])) this.generated(call['function']['arguments']);
    }
  }
}
