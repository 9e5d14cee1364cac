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

/**
 * The sum of `count` over the parts of `text` cut as above, stopping once the
 * sum passes `limit` (the sum so far is then returned: more than `limit`).
 */
export function countByPieces(text: string, count: (part: string) => number, limit: number, chunk: number): number {
  if (text.length <= LONG_RUN / 4) return count(text);
  const scan = newScan(text, chunk);
  let total = 0;
  for (;;) {
    total += countNextPart(scan, count);
    if (scan.start >= text.length || total > limit) return total;
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
  const scan = newScan(text, chunk);
  let total = 0;
  let since = 0;
  for (;;) {
    total += countNextPart(scan, count);
    if (scan.start >= text.length || total > limit) return total;
    if (scan.start - since >= every) {
      since = scan.start;
      await pause();
    }
  }
}

/** A scan of a text, where it has got to and the runs it is in (one object a count: nothing allocated a part). */
interface Scan {
  readonly text: string;
  readonly chunk: number;
  /** Where the next part starts (the text's length once it is all counted). */
  start: number;
  /** The latest position where o200k's pieces surely end (the end of a word), or -1. */
  safe: number;
  previous: number;
  previousCode: number;
  /** Bytes in the current run of each kind, and of the same code point. */
  letters: number;
  signs: number;
  spaces: number;
  tail: number;
  same: number;
}

const newScan = (text: string, chunk: number): Scan => ({
  text,
  chunk,
  start: 0,
  safe: -1,
  previous: 0,
  previousCode: -1,
  letters: 0,
  signs: 0,
  spaces: 0,
  tail: 0,
  same: 0,
});

/**
 * Counts the next part of the scan's text and moves past it: up to the next
 * cut (a long run's, or a word end past `chunk` characters), or to the end.
 * A run of one repeated code point is not cut into parts at all: after its
 * first LONG_RUN bytes, each further block of LONG_RUN bytes counts what one
 * block does. A plain loop over locals: as a generator it cost half as much
 * again per character.
 */
function countNextPart(scan: Scan, count: (part: string) => number): number {
  const { text, chunk } = scan;
  const n = text.length;
  const start = scan.start;
  let { safe, previous, previousCode, letters, signs, spaces, tail, same } = scan;
  for (let i = start; i < n; i++) {
    let code = text.charCodeAt(i);
    let units = 1;
    let bytes = 1;
    let bits: number;
    if (code < 128) bits = classes[code]!;
    else {
      if (code >= 0xd800 && code < 0xdc00 && i + 1 < n) {
        const low = text.charCodeAt(i + 1);
        if (low >= 0xdc00 && low < 0xe000) {
          code = (code - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
          units = 2;
        }
      }
      bits = classes[code] || classify(code);
      bytes = code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    }
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
    if (same >= LONG_RUN) {
      // A run of one code point: this part ends with its first LONG_RUN bytes, whole blocks after them are counted
      // by multiplication, and what is left of the run starts the next part.
      let tokens = count(text.slice(start, i + 1));
      let runEnd = i + 1;
      while (runEnd < n && sameAt(text, runEnd, code, units)) runEnd += units;
      const per = Math.floor(LONG_RUN / bytes); // code points a block
      const blocks = Math.floor((runEnd - i - 1) / (per * units));
      if (blocks > 0) tokens += blocks * tokensOfBlock(code, per, count);
      return restart(scan, i + 1 + blocks * per * units, previous, tokens);
    }
    if (letters >= LONG_RUN || signs >= LONG_RUN || spaces >= LONG_RUN || tail >= LONG_RUN) {
      // Inside a long run: cut after this character, and count the run on from here.
      return restart(scan, i + 1, previous, count(text.slice(start, i + 1)));
    }
    if (i - start >= chunk && safe > start) {
      // Runs cannot straddle a word end: they go on counting from there.
      scan.start = safe;
      scan.safe = -1;
      scan.previous = previous;
      scan.previousCode = previousCode;
      scan.letters = letters;
      scan.signs = signs;
      scan.spaces = spaces;
      scan.tail = tail;
      scan.same = same;
      return count(text.slice(start, safe));
    }
  }
  scan.start = n;
  return count(start === 0 ? text : text.slice(start));
}

/** The scan goes on at `at` with every run begun afresh; returns `tokens`. */
function restart(scan: Scan, at: number, previous: number, tokens: number): number {
  scan.start = at;
  scan.safe = -1;
  scan.previous = previous;
  scan.previousCode = -1;
  scan.letters = scan.signs = scan.spaces = scan.tail = scan.same = 0;
  return tokens;
}

function sameAt(text: string, at: number, codePoint: number, units: number): boolean {
  return units === 1 ? text.charCodeAt(at) === codePoint : text.codePointAt(at) === codePoint;
}
