/**
 * A hash table from small non-negative integers (30-bit slots) to
 * non-negative numbers (byte offsets), in two typed arrays: linear probing,
 * deletion by shifting the run back (no tombstones), doubled at half full.
 * It holds no JavaScript objects, so the garbage collector never walks it,
 * and growing it allocates outside the heap: a Map of as many entries grew
 * the old generation in steps and, measured under load, set off collections
 * that promoted every call's short-lived objects.
 */
export class SlotTable {
  /** slot + 1 per bucket; 0: empty. */
  #keys: Int32Array;
  #values: Float64Array;
  #mask: number;
  #size = 0;

  constructor(initialCapacity = 1024) {
    let capacity = 16;
    while (capacity < initialCapacity) capacity *= 2;
    this.#keys = new Int32Array(capacity);
    this.#values = new Float64Array(capacity);
    this.#mask = capacity - 1;
  }

  get size(): number {
    return this.#size;
  }

  /** The value under `slot`, or -1. */
  get(slot: number): number {
    const keys = this.#keys;
    const want = slot + 1;
    for (let i = hash(slot) & this.#mask; ; i = (i + 1) & this.#mask) {
      const k = keys[i]!;
      if (k === want) return this.#values[i]!;
      if (k === 0) return -1;
    }
  }

  set(slot: number, value: number): void {
    if ((this.#size + 1) * 2 > this.#keys.length) this.#grow();
    const keys = this.#keys;
    const want = slot + 1;
    let i = hash(slot) & this.#mask;
    for (; keys[i] !== 0 && keys[i] !== want; i = (i + 1) & this.#mask);
    if (keys[i] === 0) {
      keys[i] = want;
      this.#size++;
    }
    this.#values[i] = value;
  }

  delete(slot: number): void {
    const keys = this.#keys;
    const values = this.#values;
    const mask = this.#mask;
    const want = slot + 1;
    let i = hash(slot) & mask;
    for (; keys[i] !== want; i = (i + 1) & mask) if (keys[i] === 0) return;
    this.#size--;
    // Shift back the entries after the hole that would no longer be found from their home bucket.
    for (let j = (i + 1) & mask; keys[j] !== 0; j = (j + 1) & mask) {
      const home = hash(keys[j]! - 1) & mask;
      if (((j - home) & mask) >= ((j - i) & mask)) {
        keys[i] = keys[j]!;
        values[i] = values[j]!;
        i = j;
      }
    }
    keys[i] = 0;
  }

  #grow(): void {
    const oldKeys = this.#keys;
    const oldValues = this.#values;
    this.#keys = new Int32Array(oldKeys.length * 2);
    this.#values = new Float64Array(oldKeys.length * 2);
    this.#mask = this.#keys.length - 1;
    this.#size = 0;
    for (let i = 0; i < oldKeys.length; i++) if (oldKeys[i] !== 0) this.set(oldKeys[i]! - 1, oldValues[i]!);
  }
}

/** Slots are already hash bits; this spreads runs of nearby ones (tests use small integers). */
const hash = (slot: number) => Math.imul(slot, 0x9e3779b1) >>> 0;

/** 30 bits of a key (a digest, so any bits will do) as a small integer: a slot of the table. */
export function slotOf(key: string): number {
  let slot = 0;
  for (let i = 0; i < key.length; i++) slot = (Math.imul(slot, 31) + key.charCodeAt(i)) | 0;
  return slot & 0x3fffffff;
}
