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
  let s = text.includes('\r\n') ? text.replace(/\r\n/g, '\n') : text;
  s = s.replace(/[ \t]+$/gm, '');
  if (s.includes('\n\n\n')) s = collapseBlankRuns(s);
  s = s.replace(/^\n+/, '').replace(/\n+$/, '');
  return s === '' ? text : s;
}

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

/** Fences per CommonMark: ``` or ~~~ after at most three spaces. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

function collapseBlankRuns(s: string): string {
  const lines = s.split('\n');
  const out: string[] = [];
  let fence: string | undefined;
  let blank = false;
  for (const line of lines) {
    const open = FENCE.exec(line)?.[1];
    if (open !== undefined) {
      if (fence === undefined) fence = open;
      else if (open[0] === fence[0] && open.length >= fence.length) fence = undefined;
    }
    if (line === '' && blank && fence === undefined) continue;
    blank = line === '';
    out.push(line);
  }
  return out.join('\n');
}
