import { hash } from 'node:crypto';
import { countPromptTokens, countPromptTokensUpToPausing, SLICE, yieldToLoop } from '../tokens.ts';

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

  /**
   * Counts the messages and tools not remembered yet, handing the event loop
   * back as it goes: then the planner, which counts synchronously, finds a
   * long prompt's counts here instead of holding every other call up while
   * it tokenizes megabytes (compaction stage, for long prompts).
   */
  async remember(messages: readonly unknown[], tools: unknown): Promise<void> {
    let since = 0; // characters counted since the loop was last handed back
    for (const message of messages) {
      const object = typeof message === 'object' && message !== null ? message : undefined;
      if (object && this.#byObject.has(object)) continue;
      const json = JSON.stringify(message) ?? '';
      if (json.length < SLICE) {
        this.message(message);
        since += json.length;
        if (since >= SLICE) {
          since = 0;
          await yieldToLoop();
        }
        continue;
      }
      const key = keyOf(json);
      let tokens = key === undefined ? undefined : this.#get(key);
      if (tokens === undefined) {
        tokens = (await countPromptTokensUpToPausing([message], undefined, Number.POSITIVE_INFINITY)) - PER_REPLY;
        if (key !== undefined) this.#put(key, tokens);
      }
      if (object) this.#byObject.set(object, tokens);
    }
    if (tools === undefined || tools === null) return;
    const key = keyOf(JSON.stringify(tools) ?? '');
    if (key !== undefined && this.#get(key) === undefined) {
      this.#put(key, (await countPromptTokensUpToPausing([], tools, Number.POSITIVE_INFINITY)) - PER_REPLY);
    }
  }

  #cached(json: string, count: () => number): number {
    const key = keyOf(json);
    if (key === undefined) return count();
    const known = this.#get(key);
    if (known !== undefined) return known;
    const tokens = count();
    this.#put(key, tokens);
    return tokens;
  }

  /** A remembered count (now the most recently used), else undefined. */
  #get(key: string): number | undefined {
    const known = this.#counts.get(key);
    if (known !== undefined) {
      this.#counts.delete(key);
      this.#counts.set(key, known);
    }
    return known;
  }

  #put(key: string, tokens: number): void {
    if (this.#counts.size >= this.#maxEntries) this.#counts.delete(this.#counts.keys().next().value as string);
    this.#counts.set(key, tokens);
  }
}

/** The digest a long message's count is remembered by; undefined for a short one (counted directly). */
const keyOf = (json: string): string | undefined => (json.length < CACHE_FROM ? undefined : hash('sha256', json, 'base64'));
