/**
 * The `whitespace` strategy: formatting a reader (human or model) cannot
 * see, removed without touching anything that carries meaning.
 * - CRLF line ends become LF;
 * - spaces and tabs at the end of a line are removed;
 * - outside fenced code blocks, a run of blank lines becomes one blank line
 *   (inside a fence the blank lines are kept: code's layout, string literals);
 * - blank lines at the very start and end are removed.
 * Never touched: indentation (leading whitespace), whitespace between two
 * visible characters of a line (aligned columns, and every JSON string: a
 * JSON string cannot hold a raw line break, so these rules never reach
 * inside one), lone CRs (progress bars), and a text that is only
 * whitespace (it stays as it is rather than become empty).
 */
export function normalizeWhitespace(text: string): string {
  if (isTidy(text)) return text;
  let s = text.includes('\r\n') ? text.replaceAll('\r\n', '\n') : text;
  s = dropTrailingBlanks(s);
  if (s.includes('\n\n\n')) s = collapseBlankRuns(s);
  let from = 0;
  while (from < s.length && s.charCodeAt(from) === 10) from++;
  let to = s.length;
  while (to > from && s.charCodeAt(to - 1) === 10) to--;
  s = s.slice(from, to);
  return s === '' ? text : s;
}

/**
 * Spaces and tabs before a line end or the text's end removed, in one pass.
 * A line ends where `$` of a multiline regular expression matches (\n, a
 * lone \r, U+2028, U+2029): the rule was `/[ \t]+$/gm`, which took time
 * growing with the square of a run of spaces not at a line end (80,000 of
 * them: 11.7 s).
 */
function dropTrailingBlanks(s: string): string {
  const n = s.length;
  let out = '';
  let copied = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c !== 32 && c !== 9) continue;
    let end = i + 1;
    while (end < n && (s.charCodeAt(end) === 32 || s.charCodeAt(end) === 9)) end++;
    if (end === n || isLineEnd(s.charCodeAt(end))) {
      out += s.slice(copied, i);
      copied = end;
    }
    i = end - 1;
  }
  return copied === 0 ? s : out + s.slice(copied);
}

const isLineEnd = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;

/** The common case, checked without allocating: nothing for the rules above to do. */
function isTidy(text: string): boolean {
  const n = text.length;
  if (n === 0) return true;
  const first = text.charCodeAt(0);
  const last = text.charCodeAt(n - 1);
  if (first === 10 || last === 10 || last === 32 || last === 9) return false;
  let blanks = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      const before = text.charCodeAt(i - 1);
      if (before === 32 || before === 9 || before === 13) return false;
      if (++blanks === 3) return false;
    } else blanks = 0;
  }
  return true;
}

/**
 * Outside fenced code blocks, a run of blank lines becomes one blank line:
 * the lines are walked in place (no split, no pattern per line: 80,000
 * blank lines inside a fence cost 150 ms that way).
 */
function collapseBlankRuns(s: string): string {
  const n = s.length;
  let out = '';
  let copied = 0;
  let fenceChar = 0; // 0: outside a fence
  let fenceLength = 0;
  let blank = false;
  for (let start = 0; start <= n; ) {
    let end = s.indexOf('\n', start);
    if (end < 0) end = n;
    // Fences per CommonMark: ``` or ~~~ (or longer) after at most three spaces; closed by a run of the same at least as long.
    const at = start + leadingSpaces(s, start, end);
    const fence = fenceLengthAt(s, at, end);
    if (fence > 0) {
      const char = s.charCodeAt(at);
      if (fenceChar === 0) {
        fenceChar = char;
        fenceLength = fence;
      } else if (char === fenceChar && fence >= fenceLength) fenceChar = 0;
    }
    const empty = start === end;
    if (empty && blank && fenceChar === 0) {
      // Dropped with the line break before it.
      out += s.slice(copied, start - 1);
      copied = start;
    }
    blank = empty;
    start = end + 1;
  }
  return copied === 0 ? s : out + s.slice(copied);
}

/** Up to three spaces at the start of the line `[start, end)` (CommonMark's indentation of a fence). */
function leadingSpaces(s: string, start: number, end: number): number {
  let i = start;
  while (i < end && i - start < 3 && s.charCodeAt(i) === 32) i++;
  return i - start;
}

/** The length of the run of ` or ~ at `at` when it is three or more (a fence), else 0. */
function fenceLengthAt(s: string, at: number, end: number): number {
  const char = s.charCodeAt(at);
  if (at >= end || (char !== 96 && char !== 126)) return 0;
  let i = at;
  while (i < end && s.charCodeAt(i) === char) i++;
  return i - at >= 3 ? i - at : 0;
}
