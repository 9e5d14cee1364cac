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
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalJson(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const v = record[key];
    if (v === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(v)}`;
    first = false;
  }
  return `${out}}`;
}
