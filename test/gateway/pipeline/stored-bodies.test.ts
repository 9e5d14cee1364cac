import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { jsonPrefix } from '../../../src/gateway/pipeline/json-prefix.ts';
import { capUtf8 } from '../../../src/gateway/pipeline/stored-bodies.ts';

/** Strings with every kind of character: ASCII, two- to four-byte UTF-8, escapes (quotes, backslashes, controls), lone surrogates. */
const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 }));
const json = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('node'), { maxLength: 5 }),
    fc.dictionary(text, tie('node'), { maxKeys: 5 }),
  ),
})).node;

describe('jsonPrefix: the start of JSON.stringify, made only as far as the cap needs', () => {
  test('always a prefix of JSON.stringify; whole when short enough, else past the limit', () => {
    fc.assert(
      fc.property(json, fc.nat({ max: 120 }), (value, limit) => {
        const whole = JSON.stringify(value);
        const { text: start, complete } = jsonPrefix(value, limit);
        if (complete) assert.equal(start, whole);
        else {
          assert.ok(whole.startsWith(start), `${JSON.stringify(start)} is not the start of ${JSON.stringify(whole)}`);
          assert.ok(start.length > limit);
          assert.ok(whole.length > limit);
        }
        if (whole.length <= limit) assert.ok(complete);
      }),
      { numRuns: 3000 },
    );
  });

  test('what JSON.stringify leaves out or writes as null, the same way', () => {
    const value = { a: undefined, b: () => 1, c: [undefined, () => 1, 2], d: Number.NaN, e: Number.POSITIVE_INFINITY, f: -0 };
    assert.deepEqual(jsonPrefix(value, 1000), { text: JSON.stringify(value), complete: true });
  });

  test('it stops at the limit: what lies beyond is never read', () => {
    const items: unknown[] = Array.from({ length: 10_000 }, (_, i) => `item ${i}`);
    Object.defineProperty(items, 5000, {
      get() {
        throw new Error('read past the limit');
      },
    });
    const { text: start, complete } = jsonPrefix({ messages: items }, 1000);
    assert.equal(complete, false);
    assert.ok(start.length > 1000 && start.length < 1100);
  });

  test('no recursion: a depth that overflows JSON.stringify is written as far as the limit', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    assert.throws(() => JSON.stringify(deep), RangeError);
    const { text: start, complete } = jsonPrefix(deep, 1000);
    assert.equal(complete, false);
    assert.equal(start, '['.repeat(start.length));
  });
});

describe('capUtf8: at most so many bytes of UTF-8, whole characters only', () => {
  test('the longest start of the text that fits, its byte count, and whether it was cut', () => {
    const wellFormed = fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 30 }));
    fc.assert(
      fc.property(wellFormed, fc.integer({ min: 1, max: 80 }), (s, max) => {
        const cut = capUtf8(s, max);
        assert.equal(cut.bytes, Buffer.byteLength(cut.text));
        assert.ok(cut.bytes <= max);
        assert.ok(s.startsWith(cut.text));
        assert.equal(cut.truncated, cut.text !== s);
        if (cut.truncated) {
          // The next character would not have fitted.
          const next = String.fromCodePoint(s.codePointAt(cut.text.length)!);
          assert.ok(cut.bytes + Buffer.byteLength(next) > max);
        }
      }),
      { numRuns: 3000 },
    );
  });

  test('a four-byte character is never split, however the cap falls', () => {
    const s = `a${'😀'.repeat(10)}`;
    for (let max = 1; max <= 41; max++) {
      const cut = capUtf8(s, max);
      assert.equal(cut.text, `a${'😀'.repeat(Math.floor((max - 1) / 4))}`, `cap ${max}`);
    }
  });
});
