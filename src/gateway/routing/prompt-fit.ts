import { type CatalogModel, MODELS } from '../catalog/models.ts';
import type { ProviderInfo } from '../providers/registry.ts';
import type { ChatRequest } from '../providers/types.ts';
import { countPromptTokensUpTo, countPromptTokensUpToPausing } from '../tokens.ts';
import type { PromptShape } from './prompt-shape.ts';

/**
 * Output room assumed when the client set no max_tokens: a model whose
 * window holds the prompt but not this much would cut the answer short.
 */
export const OUTPUT_RESERVE = 1024;
/** Output tokens assumed when ranking models by price (a client's max_tokens is a ceiling, not a forecast). */
const EXPECTED_OUTPUT = 500;
/**
 * A prompt is counted no further than the largest context window of the
 * catalog: past it no window holds it, and counting the rest of a 32 MiB
 * body would hold the event loop for seconds.
 */
const COUNT_LIMIT = Math.max(...MODELS.map((m) => m.contextWindow));
/** A prompt under this many tokens by the cheap bound fits every catalog window without a count. */
const SMALLEST_WINDOW = Math.min(...MODELS.map((m) => m.contextWindow));

/**
 * Whether a model can take this request: its context window holds the
 * prompt plus the requested output (LESSONS: LiteLLM #31557, fallbacks to a
 * smaller window), it accepts the request's images, and its wire format
 * accepts what was asked (the Anthropic adapter refuses JSON response
 * formats and several choices with a 400). The prompt's tokens are counted
 * only when the cheap upper bound does not settle it, and then once.
 */
export class PromptFit {
  readonly #body: ChatRequest;
  readonly shape: PromptShape;
  #tokens: number | undefined;

  constructor(body: ChatRequest, shape: PromptShape) {
    this.#body = body;
    this.shape = shape;
  }

  /** Tokens the window must hold: the prompt (bounded, or counted) plus the output asked for or reserved. */
  fits(entry: CatalogModel | undefined): boolean {
    if (entry === undefined) return true; // a model the catalog does not list: its window is unknown, the provider decides
    const output = this.shape.maxOutput ?? OUTPUT_RESERVE;
    if (this.shape.tokenBound + output <= entry.contextWindow) return true;
    return this.promptTokens() + output <= entry.contextWindow;
  }

  accepts(provider: ProviderInfo, entry: CatalogModel | undefined): boolean {
    if (this.shape.images > 0 && entry !== undefined && !entry.vision) return false;
    if (provider.format === 'anthropic' && (this.shape.jsonOutput || this.shape.choices > 1)) return false;
    return true;
  }

  /**
   * Counts the prompt now when fits() may need it (its cheap bound is over
   * the smallest catalog window), handing the event loop back as it goes;
   * undefined when no count can be needed (most calls: no promise).
   */
  countIfLong(): Promise<void> | undefined {
    if (this.#tokens !== undefined || this.shape.tokenBound + (this.shape.maxOutput ?? OUTPUT_RESERVE) <= SMALLEST_WINDOW) return undefined;
    return countPromptTokensUpToPausing(this.#body.messages, this.#body['tools'], COUNT_LIMIT).then((tokens) => {
      this.#tokens = tokens;
    });
  }

  /** The prompt's tokens (tokens.ts), or some number over every catalog window when it is larger than all. */
  promptTokens(): number {
    this.#tokens ??= countPromptTokensUpTo(this.#body.messages, this.#body['tools'], COUNT_LIMIT);
    return this.#tokens;
  }

  /** USD micro-units this request would cost on `entry`, for ranking (undefined: unpriced). */
  estimate(entry: CatalogModel | undefined): number | undefined {
    if (entry === undefined) return undefined;
    const prompt = this.shape.chars / 4 + 3 * this.shape.messages;
    return prompt * entry.input + Math.min(this.shape.maxOutput ?? EXPECTED_OUTPUT, EXPECTED_OUTPUT) * entry.output;
  }
}
