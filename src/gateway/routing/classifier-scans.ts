/**
 * The classifier's structural patterns as single passes over the text.
 * Written as regular expressions they backtracked: `^\s{4,}\S.*[;{}]\s*$`
 * (multiline) rescanned a run of newlines from each of its line starts,
 * `[a-z_]\w*\([^)]*\)\s*[{;:]` rescanned to the next ")" from every "(",
 * `\$[^$\n]*[\\^_=][^$\n]*\$` rescanned to the line's end from every marker:
 * 12,000 newlines over three messages cost 217 to 426 ms a request. Each
 * function here answers exactly what its pattern did (the property test in
 * test/gateway/pipeline/routing-classifier.test.ts compares them on random
 * text), in time linear in the text.
 */

/** JavaScript's `\s`. */
export function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 0xa0) return false;
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** Where `^` and `$` of a multiline pattern match, and what `.` does not cross. */
const isLineBreak = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;

/** `\w` without the u flag. */
const isWord = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;

/**
 * `/^\s{4,}\S.*[;{}]\s*$/m`: a line whose first visible character follows
 * four or more whitespace characters counted from a line start (blank lines
 * before it count: `\s` crosses line breaks), and whose last visible
 * character, a later one on the same line, is `;`, `{` or `}`.
 */
export function hasIndentedCodeLine(text: string): boolean {
  // Most texts have none of the three: two or three native searches instead of the pass.
  if (text.indexOf(';') === -1 && text.indexOf('{') === -1 && text.indexOf('}') === -1) return false;
  const n = text.length;
  let lineStart = -1; // the earliest line start in the current run of whitespace, or -1
  let inRun = false;
  for (let q = 0; q < n; q++) {
    const c = text.charCodeAt(q);
    if (isSpace(c)) {
      if (!inRun) {
        inRun = true;
        lineStart = q === 0 || isLineBreak(text.charCodeAt(q - 1)) ? q : -1;
      }
      if (lineStart < 0 && isLineBreak(c)) lineStart = q + 1;
      continue;
    }
    const indented = inRun && lineStart >= 0 && q - lineStart >= 4;
    inRun = false;
    if (!indented) continue;
    // The first visible character of its line: the line is read once.
    let last = q;
    let end = q + 1;
    for (; end < n; end++) {
      const d = text.charCodeAt(end);
      if (isLineBreak(d)) break;
      if (!isSpace(d)) last = end;
    }
    if (last > q) {
      const l = text.charCodeAt(last);
      if (l === 59 || l === 123 || l === 125) return true;
    }
    q = end - 1;
  }
  return false;
}

/**
 * `/\bSELECT\s[\s\S]{1,300}?\sFROM\s/`: SELECT at a word start and then
 * whitespace, and ` FROM ` (whitespace either side) starting 8 to 307
 * characters after it. The FROMs are found once, in order, for every SELECT.
 */
export function hasSelectFrom(text: string): boolean {
  let from = -1; // the latest ` FROM ` found (its leading whitespace's index)
  let searched = 0; // FROMs before this index are found already
  for (let p = text.indexOf('SELECT'); p >= 0; p = text.indexOf('SELECT', p + 1)) {
    if ((p > 0 && isWord(text.charCodeAt(p - 1))) || !isSpace(text.charCodeAt(p + 6))) continue;
    if (from < p + 8) {
      from = -1;
      for (let f = text.indexOf('FROM', Math.max(searched, p + 9)); f >= 0; f = text.indexOf('FROM', f + 1)) {
        if (isSpace(text.charCodeAt(f - 1)) && isSpace(text.charCodeAt(f + 4))) {
          from = f - 1;
          break;
        }
      }
      if (from < 0) return false;
      searched = from + 1;
    }
    if (from <= p + 307) return true;
  }
  return false;
}

/**
 * `/\$[^$\n]*[\\^_=][^$\n]*\$/`: two dollar signs on one line with no
 * dollar sign between them and one of `\ ^ _ =` (inline LaTeX).
 */
export function hasInlineMath(text: string): boolean {
  const first = text.indexOf('$');
  if (first === -1) return false;
  let open = false;
  let marked = false;
  for (let i = first; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 36) {
      if (open && marked) return true;
      open = true;
      marked = false;
    } else if (c === 10) open = false;
    else if (open && (c === 92 || c === 94 || c === 95 || c === 61)) marked = true;
  }
  return false;
}

/**
 * The first match of `/[a-z_]\w*\([^)]*\)\s*[{;:]/i` (a call or a
 * definition: `parse(input) {`, `free(p);`) starting at `from` or later, as
 * [start, end), or undefined. Each "(" is looked at once and the ")" after it
 * found once for all the "(" before it.
 */
export function nextCallSite(text: string, from: number): [number, number] | undefined {
  const n = text.length;
  let close = -1; // the first ")" after the latest "(" looked at
  let after = -1; // where that ")" is followed (after whitespace) by one of { ; :, else -1
  for (let open = text.indexOf('(', from); open >= 0; open = text.indexOf('(', open + 1)) {
    if (open > close) {
      close = text.indexOf(')', open + 1);
      if (close < 0) return undefined; // no ")" after this "(", nor after any later one
      let u = close + 1;
      while (u < n && isSpace(text.charCodeAt(u))) u++;
      const c = text.charCodeAt(u);
      after = c === 123 || c === 59 || c === 58 ? u : -1;
    }
    if (after < 0) continue;
    // The name before "(": its first letter or underscore, at `from` or later.
    let start = open;
    while (start > from && isWord(text.charCodeAt(start - 1))) start--;
    while (start < open && !isLetterOrUnderscore(text.charCodeAt(start))) start++;
    if (start < open) return [start, after + 1];
  }
  return undefined;
}

const isLetterOrUnderscore = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
