import { hash } from 'node:crypto';
import { countPromptTokens } from '../tokens.ts';

/** countPromptTokens' framing for the reply, counted once per prompt. */
const PER_REPLY = countPromptTokens([]);

/** Messages shorter than this (as JSON) are counted directly: hashing them would cost about as much. */
const CACHE_FROM = 512;

/**
 * Prompt tokens exactly as countPromptTokens counts them (the sum of each
 * message's own count, plus the reply framing and the tool definitions),
 * with each long message's count remembered by a digest of its JSON: a
 * conversation's history comes back on every turn and tokenizing it again
 * would cost milliseconds per request (o200k runs at about 8 MB/s here).
 * Bounded: past `maxEntries` the least recently used count is forgotten.
 */
export class PromptTokenCounter {
  readonly #counts = new Map<string, number>();
  /**
   * Counts by message object too: planning a budget asks for the same
   * messages several times (the prompt, the sizes, each attempt, the saving),
   * and each time cost a JSON text and a digest of it (a 1 MB message: about
   * 10 ms). Messages are never changed in place (planner.ts); what a request
   * held goes with it.
   */
  readonly #byObject = new WeakMap<object, number>();
  readonly #maxEntries: number;

  constructor(maxEntries = 50_000) {
    this.#maxEntries = maxEntries;
  }

  /** One message's share of countPromptTokens (its framing included). */
  message(message: unknown): number {
    const object = typeof message === 'object' && message !== null ? message : undefined;
    const known = object && this.#byObject.get(object);
    if (known !== undefined) return known;
    const tokens = this.#cached(JSON.stringify(message) ?? '', () => countPromptTokens([message]) - PER_REPLY);
    if (object) this.#byObject.set(object, tokens);
    return tokens;
  }

  /** The tool definitions' share of countPromptTokens. */
  tools(tools: unknown): number {
    if (tools === undefined || tools === null) return 0;
    return this.#cached(JSON.stringify(tools) ?? '', () => countPromptTokens([], tools) - PER_REPLY);
  }

  /** countPromptTokens(messages, tools), from the remembered counts where it can. */
  prompt(messages: readonly unknown[], tools: unknown): number {
    let total = PER_REPLY + this.tools(tools);
    for (const message of messages) total += this.message(message);
    return total;
  }

  #cached(json: string, count: () => number): number {
    if (json.length < CACHE_FROM) return count();
    const key = hash('sha256', json, 'base64');
    const known = this.#counts.get(key);
    if (known !== undefined) {
      this.#counts.delete(key);
      this.#counts.set(key, known);
      return known;
    }
    const tokens = count();
    if (this.#counts.size >= this.#maxEntries) this.#counts.delete(this.#counts.keys().next().value as string);
    this.#counts.set(key, tokens);
    return tokens;
  }
}
