import type { HttpProblem } from '../../platform/errors.ts';
import { upstreamInvalid } from '../openai-errors.ts';
import { isObject, type JsonObject, parseObject } from '../providers/json.ts';
import { SseEventTooLarge, SseParser } from '../providers/sse.ts';
import type { ChatStream, TokenUsage } from '../providers/types.ts';
import { upstreamEventTooLarge, upstreamStreamIncomplete } from '../providers/upstream-errors.ts';

/** Most tool calls one answer may make (as the Anthropic adapter's stream bounds them). */
const MAX_TOOL_CALLS = 1024;

/**
 * What a surface's stream in another format shares when it is made from a
 * Chat Completions stream (any adapter's chatStream, created with
 * includeUsage: true): the inner stream's output (OpenAI SSE) read with the
 * project's SSE parser, so an event split across pushes is whole before it
 * is translated, each piece once (linear in the answer); each chunk's first
 * choice handed on as its delta, its tool calls one by one and its
 * finish_reason kept; [DONE] ends the answer; the inner stream's error
 * event, a garbled chunk, fail() or a body that ends early end it once
 * with the format's failure, after which input is ignored. usage, model
 * and settleUnfinished are the inner stream's; error is this stream's own
 * when it ended the stream itself. A format implements the hooks
 * (surfaces/messages/stream-from-chat.ts, surfaces/responses/stream-from-chat.ts).
 */
export abstract class ChatStreamTranslator implements ChatStream {
  protected readonly inner: ChatStream;
  readonly #parser = new SseParser();
  /** What the next push, end or fail returns. */
  protected out = '';
  /** The answer ended (complete or failed): anything later is ignored. */
  protected finished = false;
  /** The last finish_reason a chunk gave. */
  protected finishReason: unknown;
  #error: HttpProblem | undefined;
  /** Chat Completions indexes of the tool calls begun so far. */
  readonly #toolCalls = new Set<number>();

  constructor(inner: ChatStream) {
    this.inner = inner;
  }

  /** The provider's name, for the errors this stream ends with. */
  protected abstract readonly provider: string;
  /** A chunk, before its choice is read (the first one names the model). */
  protected abstract chunk(parsed: JsonObject): void;
  /** The first choice's delta, but its tool calls. */
  protected abstract delta(delta: JsonObject): void;
  /** One piece of a tool call, by its Chat Completions index. */
  protected abstract toolCall(call: JsonObject, index: number): void;
  /** [DONE]: writes the end of a complete answer. */
  protected abstract done(): void;
  /** Writes the end of a failed answer (`finished` and `error` are set already). */
  protected abstract failed(error: HttpProblem): void;

  get usage(): TokenUsage | undefined {
    return this.inner.usage;
  }
  get model(): string | undefined {
    return this.inner.model;
  }
  get error(): HttpProblem | undefined {
    return this.#error ?? this.inner.error;
  }

  settleUnfinished(promptTokens: () => number): void {
    this.inner.settleUnfinished(promptTokens);
  }

  push(chunk: Buffer): string {
    if (this.finished) return '';
    this.#read(this.inner.push(chunk), false);
    return this.#take();
  }

  end(): string {
    if (this.finished) return '';
    this.#read(this.inner.end(), true);
    if (!this.finished) this.stop(upstreamStreamIncomplete(this.provider));
    return this.#take();
  }

  fail(error: HttpProblem): string {
    if (this.finished) return '';
    this.#read(this.inner.fail(error), false);
    if (!this.finished) this.stop(error);
    return this.#take();
  }

  /** How many tool calls the answer began. */
  protected get toolCalls(): number {
    return this.#toolCalls.size;
  }

  /**
   * A tool call begins: false (the stream failed) when it was begun before,
   * the answer having moved on from it (arguments interleaved between calls,
   * which no provider we know sends, cannot be relayed in order), or when
   * the answer has made too many.
   */
  protected beginToolCall(index: number): boolean {
    if (this.#toolCalls.has(index) || this.#toolCalls.size >= MAX_TOOL_CALLS) {
      this.stop(upstreamInvalid(this.provider));
      return false;
    }
    this.#toolCalls.add(index);
    return true;
  }

  /** Ends the answer with `error`. */
  protected stop(error: HttpProblem): void {
    this.#error = error;
    this.finished = true;
    this.failed(error);
  }

  /** The inner stream's output (OpenAI SSE), parsed and translated; `last`: nothing follows it. */
  #read(text: string, last: boolean): void {
    try {
      if (text !== '') this.#parser.push(Buffer.from(text), this.#onEvent);
      if (last) this.#parser.end(this.#onEvent);
    } catch (err) {
      if (!(err instanceof SseEventTooLarge)) throw err;
      if (!this.finished) this.stop(upstreamEventTooLarge(this.provider, err.limit));
    }
  }

  readonly #onEvent = (_event: string, data: string): void => {
    if (this.finished) return;
    if (data === '[DONE]') {
      this.done();
      this.finished = true;
      return;
    }
    const parsed = parseObject(data);
    if (parsed === undefined) {
      this.stop(upstreamInvalid(this.provider));
      return;
    }
    if (parsed['error'] !== undefined) {
      // The inner stream wrote its error event and recorded the error with its status.
      this.stop(this.inner.error ?? upstreamInvalid(this.provider));
      return;
    }
    this.chunk(parsed);
    const choices = parsed['choices'];
    const choice = Array.isArray(choices) ? choices[0] : undefined;
    if (!isObject(choice)) return;
    const delta = choice['delta'];
    if (isObject(delta)) {
      this.delta(delta);
      const calls = delta['tool_calls'];
      if (Array.isArray(calls)) {
        for (let k = 0; k < calls.length && !this.finished; k++) {
          const call = calls[k];
          if (isObject(call)) this.toolCall(call, typeof call['index'] === 'number' ? call['index'] : k);
        }
      }
    }
    if (choice['finish_reason'] !== undefined && choice['finish_reason'] !== null) this.finishReason = choice['finish_reason'];
  };

  #take(): string {
    const out = this.out;
    this.out = '';
    return out;
  }
}
