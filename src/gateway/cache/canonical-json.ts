import { bodyTooDeep, MAX_JSON_DEPTH } from '../../platform/json-depth.ts';

/**
 * A value's canonical JSON text: object keys sorted (by UTF-16 code units,
 * as Array.prototype.sort compares strings), no whitespace, arrays in
 * their order. Two JSON documents that differ only in key order or
 * insignificant whitespace give the same text once parsed. Numbers are
 * written as JSON.stringify writes them (1.0 and 1 are one number once
 * parsed). Meant for parsed JSON only: no cycles, no toJSON, no undefined
 * inside arrays (an `undefined` property is left out, as JSON.stringify does).
 *
 * Hand-written rather than a dependency: twenty lines, and the cache key's
 * exact text is part of its versioned format (cache-key.ts).
 */
export function canonicalJson(value: unknown, depth = 0): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  // Recursive, as deep as the value nests: a request body is refused past MAX_JSON_DEPTH before it is parsed
  // (src/platform/json-depth.ts); checked again here, so that no caller can make it recurse further.
  if (depth >= MAX_JSON_DEPTH) throw bodyTooDeep();
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(value[i], depth + 1);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = sortedKeys(record);
  let out = '{';
  let first = true;
  for (const key of keys) {
    const v = record[key];
    if (v === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(v, depth + 1)}`;
    first = false;
  }
  return `${out}}`;
}

/**
 * Past this many keys an object's keys go to the built-in sort: insertion
 * takes time that grows with the square of the count, and a client's body
 * (up to GATEWAY_BODY_LIMIT_BYTES) may hold an object of any size: 40,000
 * keys took 4.7 s by insertion here, blocking the event loop.
 */
const INSERTION_MAX = 16;

/**
 * The object's keys in Array.prototype.sort's default order (UTF-16 code
 * units, which `<` compares too). A request's objects have a handful of
 * keys, sorted by insertion into the array Object.keys made: the built-in
 * sort allocates a work area on every call (about 700 bytes a call under
 * benchmark 5's load, the most of any one site in the cache key).
 */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record);
  if (keys.length > INSERTION_MAX) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let at = i;
    while (at > 0 && keys[at - 1]! > key) {
      keys[at] = keys[at - 1]!;
      at--;
    }
    keys[at] = key;
  }
  return keys;
}
