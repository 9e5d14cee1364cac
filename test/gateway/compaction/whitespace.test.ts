import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { normalizeWhitespace } from '../../../src/gateway/compaction/whitespace.ts';
import { source, withinDeadline } from '../../helpers/deadline.ts';

describe('whitespace strategy', () => {
  test('CRLF, trailing spaces and tabs, blank-line runs and blank edges go', () => {
    assert.equal(normalizeWhitespace('\n\nfirst  \r\nsecond\t\r\n\r\n\r\n\r\nthird \n\n'), 'first\nsecond\n\nthird');
  });

  test('indentation and spaces between words are kept (aligned columns, JSON strings)', () => {
    const text = 'def f():\n    return {"a":  "x   y"}\n\tcol1    col2';
    assert.equal(normalizeWhitespace(text), text);
    const json = '{\n  "message": "two  spaces  inside",   \n  "n": 1\n}';
    assert.equal(normalizeWhitespace(json), '{\n  "message": "two  spaces  inside",\n  "n": 1\n}');
    assert.deepEqual(JSON.parse(normalizeWhitespace(json)), JSON.parse(json), 'JSON means the same');
  });

  test('inside a fenced code block, blank-line runs are kept; outside, they collapse', () => {
    const text = 'Here:\n\n\n\n```python\nimport os\n\n\ndef main():\n    pass\n```\n\n\n\nDone.';
    assert.equal(normalizeWhitespace(text), 'Here:\n\n```python\nimport os\n\n\ndef main():\n    pass\n```\n\nDone.');
    const tilde = '~~~~\na\n\n\n```\nstill inside\n\n\nb\n~~~~\n\n\nafter';
    assert.equal(normalizeWhitespace(tilde), '~~~~\na\n\n\n```\nstill inside\n\n\nb\n~~~~\n\nafter');
  });

  test('a tidy text comes back as the same string; whitespace-only text is not emptied; lone CRs stay', () => {
    const tidy = 'already\n\ntidy';
    assert.equal(normalizeWhitespace(tidy), tidy);
    assert.equal(normalizeWhitespace('   \n  '), '   \n  ');
    assert.equal(normalizeWhitespace('progress 10%\rprogress 90%'), 'progress 10%\rprogress 90%');
  });

  test('idempotent', () => {
    const once = normalizeWhitespace('a  \r\n\r\n\r\n```\n  x  \n\n\n```\n\n\nb\t');
    assert.equal(normalizeWhitespace(once), once);
  });
});

/** The rules as they were written before they became scans (they took time growing with the square of a run of spaces). */
function byPatterns(text: string): string {
  const n = text.length;
  let tidy = n === 0;
  if (!tidy) {
    const first = text.charCodeAt(0);
    const last = text.charCodeAt(n - 1);
    tidy = !(first === 10 || last === 10 || last === 32 || last === 9);
    let blanks = 0;
    for (let i = 0; tidy && i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 10) {
        const before = text.charCodeAt(i - 1);
        if (before === 32 || before === 9 || before === 13 || ++blanks === 3) tidy = false;
      } else blanks = 0;
    }
  }
  if (tidy) return text;
  let s = text.includes('\r\n') ? text.replace(/\r\n/g, '\n') : text;
  s = s.replace(/[ \t]+$/gm, '');
  if (s.includes('\n\n\n')) {
    const out: string[] = [];
    let fence: string | undefined;
    let blank = false;
    for (const line of s.split('\n')) {
      const open = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
      if (open !== undefined) {
        if (fence === undefined) fence = open;
        else if (open[0] === fence[0] && open.length >= fence.length) fence = undefined;
      }
      if (line === '' && blank && fence === undefined) continue;
      blank = line === '';
      out.push(line);
    }
    s = out.join('\n');
  }
  s = s.replace(/^\n+/, '').replace(/\n+$/, '');
  return s === '' ? text : s;
}

describe('whitespace strategy: linear', () => {
  test('the same result as the patterns it replaced, on random text (property)', () => {
    const piece = fc.constantFrom(' ', '  ', '\t', '\n', '\r\n', '\r', '\u2028', '\u2029', '\u00a0', 'a', 'b c', '```', '````', '~~~', '   ```', '    ```', '`', 'x\n', '\n\n\n');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        assert.equal(normalizeWhitespace(text), byPatterns(text));
      }),
      { numRuns: 3000 },
    );
  });

  // `/[ \t]+$/gm` rescanned a run of spaces not at a line end from each of its spaces: 'a', 80,000 spaces, 'b\n'
  // took 11.7 s (defect 1); `/\n+$/` did the same with blank lines kept inside a fence.
  test('long runs of spaces, tabs and blank lines are normalized within 10 s in all', async () => {
    const lengths = await withinDeadline<number[]>('normalizing hostile whitespace', 10_000, { ws: source('gateway/compaction/whitespace.ts') }, `
      const texts = [
        'a' + ' '.repeat(80000) + 'b\\n',
        'a' + ' \\t'.repeat(500000) + 'b\\n\\n\\n',
        '\`\`\`\\n' + '\\n'.repeat(500000) + 'x\\n',
        'x' + '\\n'.repeat(1000000) + 'y ',
        ' \\r'.repeat(500000) + '\\n',
      ];
      return texts.map((t) => ws.normalizeWhitespace(t).length);`);
    assert.deepEqual(lengths, [80_002, 1_000_002, 500_005, 4, 499_999]);
  });
});
