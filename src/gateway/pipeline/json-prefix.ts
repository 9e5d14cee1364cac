/**
 * The start of a value's JSON text, at least `limit` characters of it when
 * the whole is longer: `text` is always a prefix of `JSON.stringify(value)`
 * (for what JSON.parse makes: objects, arrays, strings, numbers, booleans,
 * null), and `complete` says whether it is all of it. The work is bounded by
 * `limit` (plus the key list of each object entered), not by the value: a
 * 32 MiB request body cost its tenant 0.4 to 1.3 s of the event loop with
 * JSON.stringify, only to be cut to the stored body's cap afterwards.
 * Iterative (an explicit stack), so no depth the client chose can overflow
 * anything. Past `limit` it stops: the caller cuts the text at its byte cap
 * (at least as many bytes as characters, so the cut is always inside it).
 */
export function jsonPrefix(value: unknown, limit: number): { text: string; complete: boolean } {
  const parts: string[] = [];
  let length = 0;
  const push = (piece: string) => {
    parts.push(piece);
    length += piece.length;
  };
  /** A string, or the escaped start of one long enough to pass the limit (then no closing quote: it is a prefix). */
  const pushString = (s: string, after: string) => {
    const room = limit - length + 1;
    if (s.length <= room) {
      push(JSON.stringify(s) + after);
      return;
    }
    // Never cut between the halves of a surrogate pair: JSON.stringify would escape a lone half.
    const end = isHighSurrogate(s.charCodeAt(room - 1)) ? room + 1 : room;
    push(JSON.stringify(s.slice(0, end)).slice(0, -1));
  };

  const stack: Frame[] = [];
  let next: unknown = value;
  let pending = true;
  for (;;) {
    if (length > limit) return { text: parts.join(''), complete: false };
    if (pending) {
      pending = false;
      const v = next;
      if (typeof v === 'string') pushString(v, '');
      else if (Array.isArray(v)) {
        push('[');
        stack.push({ array: v, i: 0 });
      } else if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON !== 'function') {
        push('{');
        stack.push({ object: v as Record<string, unknown>, keys: Object.keys(v), i: 0 });
      } else push(JSON.stringify(v) ?? 'null');
      continue;
    }
    const top = stack.at(-1);
    if (top === undefined) return { text: parts.join(''), complete: true };
    if ('array' in top) {
      if (top.i === top.array.length) {
        push(']');
        stack.pop();
        continue;
      }
      if (top.i > 0) push(',');
      const item = top.array[top.i++];
      next = skipped(item) ? null : item;
      pending = true;
      continue;
    }
    while (top.i < top.keys.length && skipped(top.object[top.keys[top.i]!])) top.i++;
    if (top.i === top.keys.length) {
      push('}');
      stack.pop();
      continue;
    }
    const key = top.keys[top.i]!;
    if (top.wrote) push(',');
    top.wrote = true;
    top.i++;
    pushString(key, ':');
    next = top.object[key];
    pending = true;
  }
}

type Frame = { array: readonly unknown[]; i: number } | { object: Record<string, unknown>; keys: string[]; i: number; wrote?: boolean };

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
const skipped = (v: unknown) => v === undefined || typeof v === 'function' || typeof v === 'symbol';

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
