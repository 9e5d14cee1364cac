import type { HttpProblem } from '../../platform/errors.ts';
import { errorEvent } from './error-event.ts';
import { SseEventTooLarge, SseParser } from './sse.ts';
import type { ChatStream, TokenUsage } from './types.ts';
import { upstreamEventTooLarge, upstreamStreamIncomplete } from './upstream-errors.ts';
import { MAX_TOKEN_COUNT } from './usage-counts.ts';

/**
 * Characters of generated text per token, for a stream whose usage never
 * came: the ratio tokens.ts's estimatePromptTokens uses for prompts, which
 * leans high (o200k averages about 4 characters a token on English prose,
 * about 3 on code and JSON). Each delta counts at least one token: providers
 * stream about a token per delta, which keeps text of one character a token
 * (Chinese, Japanese) from being counted a third of what it is.
 */
const CHARS_PER_TOKEN = 3;

/**
 * What every wire format's stream translator shares: the upstream SSE parsed
 * incrementally, the output gathered per push, and one way to end: an error
 * event in the OpenAI shape, once, after which input is ignored; a body that
 * ends before its terminal event ends with `upstream_stream_incomplete`.
 * A format implements `onEvent` (and calls `stop` or sets `finished`).
 */
export abstract class RelayedStream implements ChatStream {
  protected readonly provider: string;
  protected readonly parser = new SseParser();
  /** What the next push, end or fail returns. */
  protected out = '';
  /** A terminal event ([DONE] or an error) was written: anything later is ignored. */
  protected finished = false;
  protected reportedUsage: TokenUsage | undefined;
  /** The provider's final usage arrived (settleUnfinished leaves it as it is). */
  protected usageFinal = false;
  protected reportedModel: string | undefined;
  #error: HttpProblem | undefined;
  /** Generated text parsed so far, counted (never kept): its length and how many pieces it came in. */
  #generatedChars = 0;
  #generatedPieces = 0;

  constructor(provider: string) {
    this.provider = provider;
  }

  get usage(): TokenUsage | undefined {
    return this.reportedUsage;
  }
  get model(): string | undefined {
    return this.reportedModel;
  }
  get error(): HttpProblem | undefined {
    return this.#error;
  }

  push(chunk: Buffer): string {
    if (this.finished) return '';
    try {
      this.parser.push(chunk, this.onEvent);
    } catch (err) {
      this.#tooLarge(err);
    }
    return this.#take();
  }

  end(): string {
    try {
      if (!this.finished) this.parser.end(this.onEvent);
    } catch (err) {
      this.#tooLarge(err);
    }
    if (!this.finished) this.stop(upstreamStreamIncomplete(this.provider));
    return this.#take();
  }

  /** A line or event over the parser's bound ends the stream with its error (the caller then destroys the body). */
  #tooLarge(err: unknown): void {
    if (!(err instanceof SseEventTooLarge)) throw err;
    if (!this.finished) this.stop(upstreamEventTooLarge(this.provider, err.limit));
  }

  fail(error: HttpProblem): string {
    if (this.finished) return '';
    this.stop(error);
    return this.#take();
  }

  settleUnfinished(promptTokens: () => number): void {
    if (this.usageFinal) return;
    this.usageFinal = true;
    const reported = this.reportedUsage;
    const generated = Math.min(MAX_TOKEN_COUNT, Math.max(this.#generatedPieces, Math.ceil(this.#generatedChars / CHARS_PER_TOKEN)));
    const usage: TokenUsage = {
      promptTokens: reported !== undefined && reported.promptTokens > 0 ? reported.promptTokens : Math.min(MAX_TOKEN_COUNT, promptTokens()),
      cachedTokens: reported?.cachedTokens ?? 0,
      cacheWriteTokens: reported?.cacheWriteTokens ?? 0,
      completionTokens: Math.max(reported?.completionTokens ?? 0, generated),
      reasoningTokens: reported?.reasoningTokens ?? 0,
      estimated: true,
    };
    if (reported?.clamped) usage.clamped = true;
    this.reportedUsage = usage;
  }

  /** A piece of generated text (content, tool-call arguments, reasoning) as parsed: counted for settleUnfinished. */
  protected generated(text: unknown): void {
    if (typeof text !== 'string' || text.length === 0) return;
    this.#generatedChars += text.length;
    this.#generatedPieces++;
  }

  /** Ends the output with the error's event (`text`: the event to write, by default the format's own for the error). */
  protected stop(error: HttpProblem, text: string = this.errorText(error)): void {
    this.#error = error;
    this.finished = true;
    this.out += text;
  }

  /** The event that ends a failed stream in the output's format: OpenAI's here; a surface of another format says its own. */
  protected errorText(error: HttpProblem): string {
    return errorEvent(error);
  }

  /** One upstream SSE event (name, data). */
  protected abstract readonly onEvent: (event: string, data: string) => void;

  #take(): string {
    const out = this.out;
    this.out = '';
    return out;
  }
}
