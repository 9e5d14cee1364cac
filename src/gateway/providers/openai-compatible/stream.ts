import type { HttpProblem } from '../../../platform/errors.ts';
import { upstreamInvalid } from '../../openai-errors.ts';
import { errorEvent } from '../error-event.ts';
import { isObject, parseObject } from '../json.ts';
import { SSE_DONE, SseParser, sseEvent } from '../sse.ts';
import type { ChatStream, StreamOptions, TokenUsage } from '../types.ts';
import { upstreamHttpError, upstreamStreamIncomplete } from '../upstream-errors.ts';
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
 * Only chunks that may carry usage or an error are parsed (a substring test
 * first), and the first one, for the model.
 */
export class OpenAiCompatibleStream implements ChatStream {
  readonly #provider: string;
  readonly #options: StreamOptions;
  readonly #parser = new SseParser();
  #out = '';
  #finished = false;
  #usage: TokenUsage | undefined;
  #model: string | undefined;
  #error: HttpProblem | undefined;
  #sawChunk = false;

  constructor(provider: string, options: StreamOptions) {
    this.#provider = provider;
    this.#options = options;
  }

  get usage(): TokenUsage | undefined {
    return this.#usage;
  }
  get model(): string | undefined {
    return this.#model;
  }
  get error(): HttpProblem | undefined {
    return this.#error;
  }

  push(chunk: Buffer): string {
    if (this.#finished) return '';
    this.#parser.push(chunk, this.#onEvent);
    return this.#take();
  }

  end(): string {
    if (!this.#finished) this.#parser.end(this.#onEvent);
    if (!this.#finished) this.#stop(upstreamStreamIncomplete(this.#provider));
    return this.#take();
  }

  fail(error: HttpProblem): string {
    if (this.#finished) return '';
    this.#stop(error);
    return this.#take();
  }

  #take(): string {
    const out = this.#out;
    this.#out = '';
    return out;
  }

  #stop(error: HttpProblem): void {
    this.#error = error;
    this.#finished = true;
    this.#out += errorEvent(error);
  }

  readonly #onEvent = (event: string, data: string): void => {
    // Chunks are unnamed events; empty data and other names (pings some servers send) are not chunks.
    if (this.#finished || data === '' || (event !== 'message' && event !== 'error')) return;
    if (data === '[DONE]') {
      this.#finished = true;
      this.#out += SSE_DONE;
      return;
    }
    if (data.charCodeAt(0) !== 123 /* { */) {
      this.#stop(upstreamInvalid(this.#provider));
      return;
    }
    if (event === 'error' || data.indexOf('"error"') !== -1) {
      const parsed = parseObject(data);
      if (parsed === undefined) {
        this.#stop(upstreamInvalid(this.#provider));
        return;
      }
      if (event === 'error' || isObject(parsed['error']) || typeof parsed['error'] === 'string') {
        const inner = isObject(parsed['error']) ? parsed['error'] : {};
        this.#stop(upstreamHttpError(this.#provider, errorStatus(inner, 502), openAiErrorFields(parsed), {}));
        return;
      }
    }
    if (!this.#sawChunk) {
      this.#sawChunk = true;
      const parsed = parseObject(data);
      if (parsed === undefined) {
        this.#stop(upstreamInvalid(this.#provider));
        return;
      }
      if (typeof parsed['model'] === 'string') this.#model = parsed['model'];
    }
    if (carriesUsageObject(data)) this.#usageChunk(data);
    else this.#out += sseEvent(data);
  };

  /** A chunk with a `usage` object: recorded; forwarded, dropped or given its cost as the client asked. */
  #usageChunk(data: string): void {
    const parsed = parseObject(data);
    if (parsed === undefined) {
      this.#stop(upstreamInvalid(this.#provider));
      return;
    }
    const usage = isObject(parsed['usage']) ? parsed['usage'] : undefined;
    const xGroq = parsed['x_groq'];
    this.#usage = openAiUsage(usage ?? (isObject(xGroq) ? xGroq['usage'] : undefined)) ?? this.#usage;
    const choices = parsed['choices'];
    const usageOnly = Array.isArray(choices) && choices.length === 0;
    if (!this.#options.includeUsage) {
      if (!usageOnly) this.#out += sseEvent(data);
      return;
    }
    const cost = usage !== undefined && this.#usage !== undefined ? this.#options.cost(this.#usage) : undefined;
    if (cost === undefined || usage === undefined) {
      this.#out += sseEvent(data);
      return;
    }
    usage['cost'] = cost;
    this.#out += sseEvent(JSON.stringify(parsed));
  }
}

/**
 * Whether the JSON text has a `"usage"` key whose value is an object (not
 * `null`, which OpenAI sends on every chunk once usage is asked for). A
 * quote inside a JSON string is escaped, so `"usage":{` is almost always a
 * key; a rare false positive costs one JSON.parse, which decides.
 */
export function carriesUsageObject(data: string): boolean {
  let at = data.indexOf('"usage"');
  while (at !== -1) {
    let i = at + 7;
    while (isSpace(data.charCodeAt(i))) i++;
    if (data.charCodeAt(i) === 58 /* : */) {
      i++;
      while (isSpace(data.charCodeAt(i))) i++;
      if (data.charCodeAt(i) === 123 /* { */) return true;
    }
    at = data.indexOf('"usage"', i);
  }
  return false;
}

function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}
