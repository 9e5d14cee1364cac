/**
 * Where a text is cut before gpt-tokenizer counts it, so that counting is
 * linear in the text's length whatever the text.
 *
 * o200k's pre-tokenizer splits text into pieces (a word with the space or
 * sign before it, a run of whitespace, a run of signs with the line breaks
 * and slashes after it, up to three digits), and gpt-tokenizer merges each
 * piece's UTF-8 bytes with a loop whose time grows with the square of their
 * number: one piece of 160,000 'a' took 20 s, 160,000 spaces 14 s. No piece
 * is longer than the run of its kind of character it comes from (plus four
 * characters, or plus the run of line breaks and slashes after signs), so:
 * - a run of LONG_RUN bytes of letters, of whitespace, of signs, or of line
 *   breaks and slashes is cut every LONG_RUN bytes, each part counted on
 *   its own: within a token per cut of the whole run's count. A run of one
 *   repeated character is not even cut: its first part is counted, and each
 *   further block of LONG_RUN bytes counts what such a block does (exact:
 *   o200k's tokens for such runs are powers of two of the character, which
 *   divide 256 bytes). Prose, code and JSON have no such run and are
 *   counted exactly as before (the benchmark corpus is, test/gateway/tokens.test.ts);
 * - any other text is cut, every `chunk` characters or so, only where o200k's
 *   pieces always end (after a letter, before anything but a letter, a mark
 *   or an apostrophe: a word piece ends there, and what follows is matched
 *   from there alike): exact, and lets a count stop soon after a limit, or
 *   hand the event loop back between parts.
 * The scan costs a few nanoseconds a character; merging pieces of at most
 * about 2 x LONG_RUN bytes costs, per byte, about what ordinary text does.
 */
export const LONG_RUN = 256;

const LETTER = 1; // \p{L} or \p{M}: a word's characters
const SIGN = 2; // neither \s nor \p{L} nor \p{N} (marks included): [^\s\p{L}\p{N}]+
const SPACE = 4; // \s
const TAIL = 8; // [\r\n/]: what o200k lets follow a run of signs in the same piece
const KNOWN = 16;

const IS_LETTER = /^\p{L}$/u;
const IS_MARK = /^\p{M}$/u;
const IS_NUMBER = /^\p{N}$/u;
const IS_SPACE = /^\s$/u;

/** Classes by code point, filled as code points are first seen (1.1 MB, mostly untouched zero pages). */
const classes = new Uint8Array(0x110000);

function classify(codePoint: number): number {
  const char = String.fromCodePoint(codePoint);
  let bits = KNOWN;
  if (IS_SPACE.test(char)) bits |= SPACE;
  else if (IS_LETTER.test(char)) bits |= LETTER;
  else if (IS_MARK.test(char)) bits |= LETTER | SIGN; // a combining mark continues a word or a run of signs alike
  else if (!IS_NUMBER.test(char)) bits |= SIGN;
  if (codePoint === 10 || codePoint === 13 || codePoint === 47) bits |= TAIL;
  classes[codePoint] = bits;
  return bits;
}

for (let c = 0; c < 128; c++) classify(c);

/** Tokens of a block (as many of it as LONG_RUN bytes hold) of one repeated code point, by code point (bounded: cleared when full). */
const blockTokens = new Map<number, number>();
const BLOCKS_KEPT = 4096;

function tokensOfBlock(codePoint: number, per: number, count: (part: string) => number): number {
  let tokens = blockTokens.get(codePoint);
  if (tokens === undefined) {
    if (blockTokens.size >= BLOCKS_KEPT) blockTokens.clear();
    tokens = count(String.fromCodePoint(codePoint).repeat(per));
    blockTokens.set(codePoint, tokens);
  }
  return tokens;
}

/** UTF-8 bytes of a code point: what gpt-tokenizer merges, and what its time grows with. */
const utf8Bytes = (codePoint: number) => (codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4);

/**
 * The sum of `count` over the parts of `text` cut as above, stopping once the
 * sum passes `limit` (the sum so far is then returned: more than `limit`).
 */
export function countByPieces(text: string, count: (part: string) => number, limit: number, chunk: number): number {
  if (text.length <= LONG_RUN / 4) return count(text);
  const totals = runningTotals(text, count, chunk);
  for (;;) {
    const next = totals.next();
    if (next.done || next.value > limit) return next.value;
  }
}

/**
 * countByPieces, handing the event loop back (`pause`) whenever about
 * `every` characters have been counted since the last pause: a long text
 * then holds the loop for a slice at a time, not for its whole count.
 */
export async function countByPiecesPausing(
  text: string,
  count: (part: string) => number,
  limit: number,
  chunk: number,
  every: number,
  pause: () => Promise<void>,
): Promise<number> {
  if (text.length <= every) return countByPieces(text, count, limit, chunk);
  const where = { at: 0 }; // how far runningTotals has got, read between its steps
  const totals = runningTotals(text, count, chunk, where);
  let since = 0;
  for (;;) {
    const next = totals.next();
    if (next.done || next.value > limit) return next.value;
    if (where.at - since >= every) {
      since = where.at;
      await pause();
    }
  }
}

/**
 * The running sum of `count` over the parts of `text`, after each part.
 * A run of one repeated code point is not cut into parts at all: after its
 * first LONG_RUN bytes, each further block of LONG_RUN bytes counts what
 * one block does.
 */
function* runningTotals(text: string, count: (part: string) => number, chunk: number, at = { at: 0 }): Generator<number, number> {
  const n = text.length;
  let total = 0;
  let start = 0;
  let safe = -1; // the latest position where o200k's pieces surely end (the end of a word)
  let previous = 0;
  let previousCode = -1;
  // Bytes in the current run of each kind, and of the same code point.
  let letters = 0;
  let signs = 0;
  let spaces = 0;
  let tail = 0;
  let same = 0;
  for (let i = 0; i < n; i++) {
    let code = text.charCodeAt(i);
    let units = 1;
    if (code >= 0xd800 && code < 0xdc00 && i + 1 < n) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low < 0xe000) {
        code = (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
        units = 2;
      }
    }
    const bits = classes[code] || classify(code);
    const bytes = utf8Bytes(code);
    letters = (bits & LETTER) !== 0 ? letters + bytes : 0;
    signs = (bits & SIGN) !== 0 ? signs + bytes : 0;
    spaces = (bits & SPACE) !== 0 ? spaces + bytes : 0;
    tail = (bits & TAIL) !== 0 ? tail + bytes : 0;
    same = code === previousCode ? same + bytes : bytes;
    // After a letter (not a mark), before anything but a letter, a mark or an apostrophe: o200k's word piece ends.
    if ((previous & (LETTER | SIGN)) === LETTER && (bits & LETTER) === 0 && code !== 39) safe = i;
    previous = bits;
    previousCode = code;
    i += units - 1;
    let end = -1; // where the part counted now ends
    if (same >= LONG_RUN) {
      // A run of one code point: this part ends with its first LONG_RUN bytes, whole blocks after them are counted
      // by multiplication, and what is left of the run starts the next part.
      total += count(text.slice(start, i + 1));
      let runEnd = i + 1;
      while (runEnd < n && sameAt(text, runEnd, code, units)) runEnd += units;
      const per = Math.floor(LONG_RUN / bytes); // code points a block
      const blocks = Math.floor((runEnd - i - 1) / (per * units));
      if (blocks > 0) total += blocks * tokensOfBlock(code, per, count);
      end = i + 1 + blocks * per * units;
    } else if (letters >= LONG_RUN || signs >= LONG_RUN || spaces >= LONG_RUN || tail >= LONG_RUN) {
      // Inside a long run: cut after this character, and count the run on from here.
      end = i + 1;
      total += count(text.slice(start, end));
    } else if (i - start >= chunk && safe > start) {
      total += count(text.slice(start, safe));
      start = safe;
      safe = -1;
      at.at = start;
      yield total;
      continue;
    }
    if (end >= 0) {
      start = end;
      i = end - 1;
      safe = -1;
      letters = signs = spaces = tail = same = 0;
      previousCode = -1;
      at.at = start;
      yield total;
    }
  }
  return start < n ? total + count(start === 0 ? text : text.slice(start)) : total;
}

function sameAt(text: string, at: number, codePoint: number, units: number): boolean {
  return units === 1 ? text.charCodeAt(at) === codePoint : text.codePointAt(at) === codePoint;
}
