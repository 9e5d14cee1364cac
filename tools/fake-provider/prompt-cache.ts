import { createHash, type Hash } from 'node:crypto';
import { countTokens, encode } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * What both prompt-cache simulations share (prompt-cache-anthropic.ts,
 * prompt-cache-openai.ts): token counts with gpt-tokenizer's o200k_base, the
 * encoding the gateway counts with (src/gateway/tokens.ts), so the figures the
 * fake reports and the ones the gateway decides on agree; and a store of
 * cached prefixes with a TTL that a hit refreshes, as both providers do.
 * Deterministic: no randomness, and the clock can be handed in.
 */

export interface PromptCacheOptions {
  /** How long an unused prefix stays cached (both providers: 5 minutes, refreshed on each hit). */
  ttlMs?: number;
  /** OpenAI-style: the number of simulated machines, each with its own cache (default 64). */
  machines?: number;
  /** Epoch ms; Date.now by default (a test can move time on). */
  now?: () => number;
}

export const DEFAULT_TTL_MS = 5 * 60_000;
export const DEFAULT_MACHINES = 64;

/** Token counts the simulation bills, as each format reports them. */
export interface CacheFigures {
  /** Every input token, cached ones included. */
  promptTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** Cached prefixes by hash, each with its expiry; expired ones are dropped as they are met and in periodic sweeps. */
export class PrefixStore {
  readonly #entries = new Map<string, number>();
  readonly #ttlMs: number;
  readonly #now: () => number;
  #lastSweep = 0;

  constructor(ttlMs: number, now: () => number) {
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** Whether `hash` is cached; a hit refreshes its TTL. */
  hit(hash: string): boolean {
    const expires = this.#entries.get(hash);
    if (expires === undefined) return false;
    const now = this.#now();
    if (expires <= now) {
      this.#entries.delete(hash);
      return false;
    }
    this.#entries.set(hash, now + this.#ttlMs);
    return true;
  }

  put(hash: string): void {
    const now = this.#now();
    this.#entries.set(hash, now + this.#ttlMs);
    if (now - this.#lastSweep > this.#ttlMs) this.#sweep(now);
  }

  get size(): number {
    return this.#entries.size;
  }

  clear(): void {
    this.#entries.clear();
  }

  #sweep(now: number): void {
    this.#lastSweep = now;
    for (const [hash, expires] of this.#entries) if (expires <= now) this.#entries.delete(hash);
  }
}

/** A chain of prefix hashes: each `next` covers everything fed so far. */
export class PrefixHash {
  readonly #hash: Hash;
  constructor(scope: string) {
    this.#hash = createHash('sha256').update(scope).update('\0');
  }
  add(part: string | Uint8Array): this {
    this.#hash.update(part);
    return this;
  }
  /** The hash of the prefix so far (the chain goes on). */
  digest(): string {
    return this.#hash.copy().digest('base64url');
  }
}

/**
 * Texts seen before are counted once: an agent resends its whole
 * conversation every turn. Bounded: emptied when it grows past its size.
 */
class Memo<T> {
  readonly #map = new Map<string, T>();
  readonly #size: number;
  readonly #make: (text: string) => T;
  constructor(size: number, make: (text: string) => T) {
    this.#size = size;
    this.#make = make;
  }
  get(text: string): T {
    let value = this.#map.get(text);
    if (value === undefined) {
      if (this.#map.size >= this.#size) this.#map.clear();
      value = this.#make(text);
      this.#map.set(text, value);
    }
    return value;
  }
}

const counts = new Memo(4096, (text) => countTokens(text));
const encodings = new Memo(4096, (text) => encode(text));

/** o200k_base tokens of `text` (as src/gateway/tokens.ts counts). */
export const tokensOf = (text: string): number => (text.length === 0 ? 0 : counts.get(text));
/** o200k_base token ids of `text`. */
export const encodingOf = (text: string): readonly number[] => (text.length === 0 ? [] : encodings.get(text));

/** Per-message framing, as OpenAI's cookbook counts it and the gateway does: 3 per message, 3 for the reply. */
export const PER_MESSAGE = 3;
export const PER_REPLY = 3;
/** An image counted flat, at OpenAI's low-detail price (as the gateway counts it). */
export const IMAGE_TOKENS = 85;
