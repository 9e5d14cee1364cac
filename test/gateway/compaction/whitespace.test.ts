import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { normalizeWhitespace } from '../../../src/gateway/compaction/whitespace.ts';

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
