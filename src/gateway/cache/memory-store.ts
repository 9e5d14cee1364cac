import type { Clock } from '../../platform/clock.ts';
import type { AnswerStore } from './answer-store.ts';
import type { CachedAnswer } from './cached-answer.ts';

/** What an entry costs beyond its texts (the Map slot, the record, its usage object and short fields), roughly, in bytes. */
const ENTRY_OVERHEAD = 256;

/** An entry's size as counted against the bound: its texts (the answer's bulk) and a fixed overhead, without serializing it. */
function weight(answer: CachedAnswer): number {
  let bytes = ENTRY_OVERHEAD + answer.provider.length + answer.model.length + (answer.completion?.length ?? 0) + (answer.usageChunk?.length ?? 0);
  if (answer.chunks) for (const chunk of answer.chunks) bytes += chunk.length + 3;
  return bytes;
}

interface Slot {
  answer: CachedAnswer;
  bytes: number;
  expiresAt: number;
}

/**
 * The in-process store: least recently used entries go first once the
 * entries' sizes (the length of their texts plus a fixed overhead, about
 * their weight in memory) pass `maxBytes`; an entry is dropped when read after its TTL. A Map keeps
 * insertion order, so re-inserting on every hit makes its first key the
 * least recently used one.
 */
export class MemoryAnswerStore implements AnswerStore {
  readonly #slots = new Map<string, Slot>();
  readonly #clock: Clock;
  readonly #maxBytes: number;
  readonly #maxEntryBytes: number;
  #bytes = 0;

  constructor(options: { clock: Clock; maxBytes: number; maxEntryBytes: number }) {
    this.#clock = options.clock;
    this.#maxBytes = options.maxBytes;
    this.#maxEntryBytes = options.maxEntryBytes;
  }

  /** Bytes held now (for metrics and tests). */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#slots.size;
  }

  async get(_tenantId: string, key: string): Promise<CachedAnswer | undefined> {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    this.#slots.delete(key);
    if (slot.expiresAt <= this.#clock.now()) {
      this.#bytes -= slot.bytes;
      return undefined;
    }
    this.#slots.set(key, slot);
    return slot.answer;
  }

  async set(_tenantId: string, key: string, answer: CachedAnswer, ttlMs: number, maxEntryBytes = this.#maxEntryBytes): Promise<void> {
    const bytes = weight(answer);
    if (bytes > Math.min(maxEntryBytes, this.#maxEntryBytes) || bytes > this.#maxBytes) return;
    const old = this.#slots.get(key);
    if (old) {
      this.#slots.delete(key);
      this.#bytes -= old.bytes;
    }
    this.#slots.set(key, { answer, bytes, expiresAt: this.#clock.now() + ttlMs });
    this.#bytes += bytes;
    for (const [oldest, slot] of this.#slots) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#slots.delete(oldest);
      this.#bytes -= slot.bytes;
    }
  }
}
