import type { Clock } from '../../platform/clock.ts';
import type { AnswerStore } from './answer-store.ts';
import { ANSWER_FORMAT_NAMES } from './answer-formats.ts';
import type { CachedAnswer } from './cached-answer.ts';
import { SlotTable, slotOf } from './slot-table.ts';

/*
 * A record in the ring, at any byte offset (DataView-free Buffer reads are
 * unaligned-safe):
 *   0  u32  the record's length in bytes, header included
 *   4  u32  the key's length in bytes
 *   8  f64  expiry, epoch ms
 *  16  u32  the usage chunk's length in bytes (streams that reported usage)
 *  20  u8   flags: REFERENCED once read since it was written
 *  21  u8   BODY_COMPLETION or BODY_CHUNKS
 *  22  u8   which of the answer's optional fields it has: HAS_USAGE, HAS_COST, HAS_USAGE_CHUNK
 *  23  u8   the answer's format, as its index in ANSWER_FORMAT_NAMES (0: Chat Completions, whose answers name none)
 *  24  u32  the key's slot in the index (slotOf), so that freeing or moving the record needs not read its key back
 *  28  f64  createdAt, then f64 costUsd, then TokenUsage's five counts as f64, in its order (decode's
 *           literal is typed: a count added to TokenUsage fails type checking until it is kept here too)
 *  84  u16  the provider's length in bytes, u16 the model's
 *  88  u32  the index of the entry's tenant (its TenantShare), for the per-tenant share
 *  92  key, provider, model, usage chunk (all UTF-8), then the body:
 *      a completion's text to the record's end, or u32 count and per chunk u32 length + its text.
 * The answer's fields are binary: written as JSON and read back with
 * JSON.parse, a store of a typical answer (about 600 bytes) took 1.47
 * against 0.98 µs, a read 0.49 against 0.33 µs, and the record was about
 * 140 bytes longer (200,000 stores into a 64 MiB ring, Node 24).
 */
const HEADER = 92;
/** The bytes a store may move to the head to keep other tenants' entries, per byte it stores (see #place). */
const PROTECT_FACTOR = 4;
const REFERENCED = 1;
const BODY_COMPLETION = 0;
const BODY_CHUNKS = 1;
const HAS_USAGE = 1;
const HAS_COST = 2;
const HAS_USAGE_CHUNK = 4;

/**
 * The in-process store: every answer serialized into one ring of
 * `maxBytes` bytes outside the JavaScript heap, so that what the cache
 * holds costs the garbage collector nothing and the process's memory is
 * its bound, whatever the churn (kept as objects, every entry outlived the
 * young generation and was later freed from the old one, which grew the
 * heap several times past what it held). New entries are written at the
 * head; when the ring is full the oldest go, except those read since they
 * were written, which are moved to the head once (a second chance, CLOCK's
 * approximation of least recently used). A table from 30 bits of the key
 * (itself a SHA-256) to the record's offset finds an entry; the full key
 * stored in the record is compared, so two keys sharing those bits cost
 * one of them its entry, never a wrong answer. An expired entry is a miss
 * at once and its space goes when the ring comes round. The ring is
 * allocated at the first store and its pages are committed as they are
 * first written, so an idle or small cache costs what it holds.
 *
 * Each tenant's entries hold at most `tenantSharePercent` of the ring
 * (GATEWAY_CACHE_TENANT_SHARE_PERCENT): a store that would take its tenant
 * past it first forgets that tenant's own oldest entries (a queue of its
 * records in the order written), never another tenant's. What it forgot
 * is reclaimed when the ring's tail comes round; until then the tail, when
 * it reaches another tenant's live entry while making room for a store,
 * moves that entry to the head as a second chance would (at most
 * PROTECT_FACTOR times the stored bytes per store, so a store stays O(1)
 * amortised), so one tenant's churn cannot push the others' entries out.
 * Only when the ring is full of entries every tenant holds within its share
 * (which takes more tenants than 100 / share) does the oldest entry go,
 * whoever's it is.
 */
export class MemoryAnswerStore implements AnswerStore {
  readonly #index = new SlotTable();
  /** Tenants with entries, by id and by the index their records carry; indexes of tenants gone are reused. */
  readonly #tenants = new Map<string, TenantShare>();
  readonly #byIndex: (TenantShare | undefined)[] = [];
  readonly #freeIndexes: number[] = [];
  /** Bytes one tenant's entries may hold. */
  readonly #share: number;
  readonly #clock: Clock;
  readonly #capacity: number;
  readonly #maxEntryBytes: number;
  #ring: Buffer | undefined;
  /** Next write offset. */
  #head = 0;
  /** Offset of the oldest record still in the ring (reachable or not). */
  #tail = 0;
  /** Where the records end before the head wrapped to 0, while the live region is split. */
  #wrapEnd = 0;
  #wrapped = false;
  /** Records in the ring, reachable or superseded. */
  #records = 0;
  /** Bytes of the records the index reaches. */
  #bytes = 0;

  constructor(options: { clock: Clock; maxBytes: number; maxEntryBytes: number; tenantSharePercent?: number }) {
    this.#clock = options.clock;
    this.#capacity = options.maxBytes;
    this.#maxEntryBytes = options.maxEntryBytes;
    this.#share = Math.floor((options.maxBytes * (options.tenantSharePercent ?? 100)) / 100);
  }

  /** Bytes of one tenant's entries that can still be read (for tests). */
  tenantBytes(tenantId: string): number {
    return this.#tenants.get(tenantId)?.bytes ?? 0;
  }

  /** Bytes of the entries that can still be read (for metrics and tests); the ring's footprint is at most maxBytes. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Entries that can still be read. */
  get size(): number {
    return this.#index.size;
  }

  get(_tenantId: string, key: string): CachedAnswer | undefined {
    const ring = this.#ring;
    const slot = slotOf(key);
    const at = this.#index.get(slot);
    if (ring === undefined || at === -1) return undefined;
    const keyBytes = ring.readUInt32LE(at + 4);
    if (ring.toString('utf8', at + HEADER, at + HEADER + keyBytes) !== key) return undefined;
    if (ring.readDoubleLE(at + 8) <= this.#clock.now()) {
      this.#forget(slot, at);
      return undefined;
    }
    ring[at + 20] = ring[at + 20]! | REFERENCED;
    return decode(ring, at, keyBytes);
  }

  set(tenantId: string, key: string, answer: CachedAnswer, ttlMs: number, maxEntryBytes = this.#maxEntryBytes): void {
    const { completion, chunks, usage, costUsd, usageChunk } = answer;
    const keyBytes = Buffer.byteLength(key);
    const providerBytes = Buffer.byteLength(answer.provider);
    const modelBytes = Buffer.byteLength(answer.model);
    const usageChunkBytes = usageChunk === undefined ? 0 : Buffer.byteLength(usageChunk);
    let size = HEADER + keyBytes + providerBytes + modelBytes + usageChunkBytes;
    if (chunks !== undefined) {
      size += 4;
      for (const chunk of chunks) size += 4 + Buffer.byteLength(chunk);
    } else size += Buffer.byteLength(completion ?? '');
    // A provider or model name past 64 KiB cannot be recorded (nor is it a real one): not kept.
    if (size > Math.min(maxEntryBytes, this.#maxEntryBytes) || size > this.#share || providerBytes > 0xffff || modelBytes > 0xffff) return;
    this.#ring ??= Buffer.allocUnsafeSlow(this.#capacity);
    const ring = this.#ring;
    // An earlier answer to the same request is superseded now, so that it is not kept as a second chance below.
    const slot = slotOf(key);
    const old = this.#index.get(slot);
    if (old !== -1) this.#forget(slot, old);
    const at = this.#place(size, this.#tenants.get(tenantId)?.index ?? -1);
    const tenant = this.#tenantShare(tenantId);
    ring.writeUInt32LE(size, at);
    ring.writeUInt32LE(keyBytes, at + 4);
    ring.writeDoubleLE(this.#clock.now() + ttlMs, at + 8);
    ring.writeUInt32LE(usageChunkBytes, at + 16);
    ring[at + 20] = 0;
    ring[at + 21] = chunks !== undefined ? BODY_CHUNKS : BODY_COMPLETION;
    ring[at + 22] = (usage !== undefined ? HAS_USAGE : 0) | (costUsd !== undefined ? HAS_COST : 0) | (usageChunk !== undefined ? HAS_USAGE_CHUNK : 0);
    ring[at + 23] = answer.format === undefined ? 0 : ANSWER_FORMAT_NAMES.indexOf(answer.format);
    ring.writeUInt32LE(slot, at + 24);
    ring.writeDoubleLE(answer.createdAt, at + 28);
    ring.writeDoubleLE(costUsd ?? 0, at + 36);
    if (usage !== undefined) {
      ring.writeDoubleLE(usage.promptTokens, at + 44);
      ring.writeDoubleLE(usage.cachedTokens, at + 52);
      ring.writeDoubleLE(usage.cacheWriteTokens, at + 60);
      ring.writeDoubleLE(usage.completionTokens, at + 68);
      ring.writeDoubleLE(usage.reasoningTokens, at + 76);
    }
    ring.writeUInt16LE(providerBytes, at + 84);
    ring.writeUInt16LE(modelBytes, at + 86);
    ring.writeUInt32LE(tenant.index, at + 88);
    let p = at + HEADER;
    p += ring.write(key, p, 'utf8');
    p += ring.write(answer.provider, p, 'utf8');
    p += ring.write(answer.model, p, 'utf8');
    if (usageChunk !== undefined) p += ring.write(usageChunk, p, 'utf8');
    if (chunks !== undefined) {
      ring.writeUInt32LE(chunks.length, p);
      p += 4;
      for (const chunk of chunks) {
        const n = ring.write(chunk, p + 4, 'utf8');
        ring.writeUInt32LE(n, p);
        p += 4 + n;
      }
    } else ring.write(completion ?? '', p, 'utf8');
    this.#point(slot, at, size);
    this.#written(tenant, slot, at);
    // Past its share, the tenant's own least recently used entries go (never this one: size <= share).
    while (tenant.bytes > this.#share && this.#forgetOldestOf(tenant, at));
  }

  /** Points the slot at the new record at `at` (a record that shared the slot is no longer reachable). */
  #point(slot: number, at: number, size: number): void {
    const old = this.#index.get(slot);
    if (old !== -1) this.#forget(slot, old);
    this.#index.set(slot, at);
    this.#bytes += size;
    this.#byIndex[this.#ring!.readUInt32LE(at + 88)]!.gain(size);
  }

  #forget(slot: number, at: number): void {
    const ring = this.#ring!;
    const size = ring.readUInt32LE(at);
    this.#index.delete(slot);
    this.#bytes -= size;
    const tenant = this.#byIndex[ring.readUInt32LE(at + 88)]!;
    if (tenant.lose(size) === 0) {
      this.#tenants.delete(tenant.id);
      this.#byIndex[tenant.index] = undefined;
      this.#freeIndexes.push(tenant.index);
    }
  }

  /** A tenant's share (made on its first store). */
  #tenantShare(tenantId: string): TenantShare {
    let tenant = this.#tenants.get(tenantId);
    if (tenant === undefined) {
      tenant = new TenantShare(tenantId, this.#freeIndexes.pop() ?? this.#byIndex.length);
      this.#tenants.set(tenantId, tenant);
      this.#byIndex[tenant.index] = tenant;
    }
    return tenant;
  }

  /**
   * Forgets the tenant's oldest entry still reachable, in the order its
   * records were written, except one read since (unmarked and queued again:
   * the ring's second chance) and the record at `keep`; false when there is
   * none left to forget.
   */
  #forgetOldestOf(tenant: TenantShare, keep: number): boolean {
    const ring = this.#ring!;
    // Each pair is queued again at most once per pass with its mark cleared, and `keep` once a pass: two passes at most.
    for (let budget = 2 * (tenant.slots.length - tenant.head) + 2; budget > 0 && tenant.head < tenant.slots.length; budget--) {
      const slot = tenant.slots[tenant.head]!;
      const at = tenant.offsets[tenant.head]!;
      tenant.head++;
      if (!this.#holds(tenant, slot, at)) continue;
      if (at === keep || (ring[at + 20]! & REFERENCED) !== 0) {
        ring[at + 20] = ring[at + 20]! & ~REFERENCED;
        this.#written(tenant, slot, at);
        continue;
      }
      this.#forget(slot, at);
      return true;
    }
    return false;
  }

  /** Whether the tenant's pair still names a reachable record of its own (a record moved or superseded since is elsewhere or gone). */
  #holds(tenant: TenantShare, slot: number, at: number): boolean {
    return this.#index.get(slot) === at && this.#ring!.readUInt32LE(at + 88) === tenant.index;
  }

  /** Notes where a tenant's record now is, dropping the tenant's stale pairs when they pile up. */
  #written(tenant: TenantShare, slot: number, at: number): void {
    if (tenant.written(slot, at)) tenant.compact((s, a) => this.#holds(tenant, s, a));
  }

  /** Whether the record at `at` is reachable (not superseded nor forgotten). */
  #live(at: number): boolean {
    return this.#index.get(this.#ring!.readUInt32LE(at + 24)) === at;
  }

  /**
   * An offset with `size` free bytes at the head (size <= capacity),
   * freeing the oldest records as needed. An oldest record read since it
   * was written is moved to the head instead, unmarked, before the new
   * record is placed: it then ranks just below it, as in a least recently
   * used list, and is freed if room is still short when its turn comes
   * again. So is another tenant's than `writer`'s (a tenant index, -1 for
   * none yet), within PROTECT_FACTOR times `size` moved: its tenant holds
   * it within its share, and the writer's own oldest entries, or what it
   * forgot, are freed instead.
   */
  #place(size: number, writer: number): number {
    const moving: Buffer[] = [];
    let protect = PROTECT_FACTOR * size;
    for (;;) {
      const next = moving[0];
      const need = next?.length ?? size;
      if (this.#records === 0) {
        this.#head = this.#tail = 0;
        this.#wrapped = false;
      }
      let fits = false;
      if (!this.#wrapped) {
        if (this.#capacity - this.#head >= need) fits = true;
        else if (this.#tail >= need) {
          this.#wrapEnd = this.#head;
          this.#head = 0;
          this.#wrapped = true;
          fits = true;
        }
      } else fits = this.#tail - this.#head >= need;
      if (!fits) {
        const moved = this.#dropOldest(writer, protect);
        if (moved) {
          moving.push(moved.record);
          protect -= moved.protected ? moved.record.length : 0;
        }
        continue;
      }
      const at = this.#head;
      this.#head += need;
      this.#records++;
      if (next === undefined) return at;
      moving.shift();
      next.copy(this.#ring!, at);
      this.#ring![at + 20] = 0;
      // The same entry, of the same tenant, somewhere else: only the index and the tenant's queue learn where.
      const slot = next.readUInt32LE(24);
      this.#index.set(slot, at);
      this.#written(this.#byIndex[next.readUInt32LE(88)]!, slot, at);
    }
  }

  /**
   * Removes the oldest record; a reachable one that is kept (read since it
   * was written, or another tenant's while `protect` bytes may still move)
   * comes back as a copy, to be moved to the head: it stays reachable and
   * counted meanwhile, at its old offset.
   */
  #dropOldest(writer: number, protect: number): { record: Buffer; protected: boolean } | undefined {
    const ring = this.#ring!;
    const at = this.#tail;
    const size = ring.readUInt32LE(at);
    let moved: { record: Buffer; protected: boolean } | undefined;
    if (this.#live(at)) {
      if (ring.readDoubleLE(at + 8) <= this.#clock.now()) this.#forget(ring.readUInt32LE(at + 24), at);
      else if ((ring[at + 20]! & REFERENCED) !== 0) moved = { record: Buffer.from(ring.subarray(at, at + size)), protected: false };
      else if (ring.readUInt32LE(at + 88) !== writer && protect >= size) moved = { record: Buffer.from(ring.subarray(at, at + size)), protected: true };
      else this.#forget(ring.readUInt32LE(at + 24), at);
    }
    this.#tail += size;
    this.#records--;
    if (this.#wrapped && this.#tail === this.#wrapEnd) {
      this.#tail = 0;
      this.#wrapped = false;
    }
    return moved;
  }
}

/**
 * One tenant's part of the ring: the bytes its reachable entries hold, and
 * its records in the order written (slot and offset pairs, in two arrays
 * read from `head`), so that its oldest can be forgotten first. A pair goes
 * stale when its record is moved, superseded or forgotten otherwise: it is
 * skipped when reached, and the store drops the stale pairs when they
 * outnumber the live ones (so the arrays stay within a few times the
 * tenant's entries, at O(1) amortised per store).
 */
class TenantShare {
  readonly id: string;
  readonly index: number;
  bytes = 0;
  entries = 0;
  slots: number[] = [];
  offsets: number[] = [];
  head = 0;

  constructor(id: string, index: number) {
    this.id = id;
    this.index = index;
  }

  gain(size: number): void {
    this.bytes += size;
    this.entries++;
  }

  /** Returns the entries left. */
  lose(size: number): number {
    this.bytes -= size;
    return --this.entries;
  }

  /** Returns whether the pairs are mostly stale now (the store then compacts them). */
  written(slot: number, at: number): boolean {
    this.slots.push(slot);
    this.offsets.push(at);
    return this.slots.length - this.head > 2 * this.entries + 64;
  }

  /** Keeps the pairs `live` accepts, in order. */
  compact(live: (slot: number, at: number) => boolean): void {
    const slots: number[] = [];
    const offsets: number[] = [];
    for (let i = this.head; i < this.slots.length; i++) {
      if (!live(this.slots[i]!, this.offsets[i]!)) continue;
      slots.push(this.slots[i]!);
      offsets.push(this.offsets[i]!);
    }
    this.slots = slots;
    this.offsets = offsets;
    this.head = 0;
  }
}

function decode(ring: Buffer, at: number, keyBytes: number): CachedAnswer {
  const end = at + ring.readUInt32LE(at);
  const has = ring[at + 22]!;
  const providerAt = at + HEADER + keyBytes;
  const modelAt = providerAt + ring.readUInt16LE(at + 84);
  const usageChunkAt = modelAt + ring.readUInt16LE(at + 86);
  const bodyAt = usageChunkAt + ring.readUInt32LE(at + 16);
  // One shape whatever the answer left out (undefined fields).
  const answer: CachedAnswer = {
    v: 1,
    provider: ring.toString('utf8', providerAt, modelAt),
    model: ring.toString('utf8', modelAt, usageChunkAt),
    createdAt: ring.readDoubleLE(at + 28),
    usage:
      (has & HAS_USAGE) === 0
        ? undefined
        : {
            promptTokens: ring.readDoubleLE(at + 44),
            cachedTokens: ring.readDoubleLE(at + 52),
            cacheWriteTokens: ring.readDoubleLE(at + 60),
            completionTokens: ring.readDoubleLE(at + 68),
            reasoningTokens: ring.readDoubleLE(at + 76),
          },
    costUsd: (has & HAS_COST) === 0 ? undefined : ring.readDoubleLE(at + 36),
  };
  const format = ring[at + 23]!;
  if (format !== 0) answer.format = ANSWER_FORMAT_NAMES[format];
  if ((has & HAS_USAGE_CHUNK) !== 0) answer.usageChunk = ring.toString('utf8', usageChunkAt, bodyAt);
  if (ring[at + 21] === BODY_COMPLETION) {
    answer.completion = ring.toString('utf8', bodyAt, end);
    return answer;
  }
  const count = ring.readUInt32LE(bodyAt);
  const chunks = new Array<string>(count);
  let p = bodyAt + 4;
  for (let i = 0; i < count; i++) {
    const n = ring.readUInt32LE(p);
    chunks[i] = ring.toString('utf8', p + 4, p + 4 + n);
    p += 4 + n;
  }
  answer.chunks = chunks;
  return answer;
}
