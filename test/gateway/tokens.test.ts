import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { LONG_RUN, countByPieces } from '../../src/gateway/token-pieces.ts';
import { countPromptTokens, countPromptTokensUpTo, countTokens, countTokensUpTo } from '../../src/gateway/tokens.ts';
import { source, withinDeadline } from '../helpers/deadline.ts';

/** gpt-tokenizer's own count, special tokens' spellings read as text (as the gateway counts). */
const exact = (text: string) => o200k(text, { disallowedSpecial: new Set() });

/** Every text of the benchmark corpus (agent transcripts: prose, code, JSON, logs), as the gateway counts them. */
function corpusTexts(): string[] {
  const texts: string[] = [];
  const lines = readFileSync(new URL('../../bench/corpus/transcripts.jsonl', import.meta.url), 'utf8').split('\n');
  for (const line of lines) {
    if (line === '') continue;
    const session = JSON.parse(line) as { messages?: Record<string, unknown>[]; tools?: unknown };
    for (const m of session.messages ?? []) {
      if (typeof m['content'] === 'string') texts.push(m['content']);
      else if (Array.isArray(m['content'])) for (const p of m['content'] as { text?: unknown }[]) if (typeof p.text === 'string') texts.push(p.text);
      if (m['tool_calls'] !== undefined) texts.push(JSON.stringify(m['tool_calls']));
    }
    if (session.tools !== undefined) texts.push(JSON.stringify(session.tools));
  }
  return texts;
}

/** Text without a run of LONG_RUN bytes of one kind: words, numbers, signs, whitespace, CJK, emoji, combining marks. */
const ordinaryText = fc
  .array(
    fc.oneof(
      fc.constantFrom(' ', '  ', '\n', '\r\n', '\t', '    ', '\n\n', '/', '//', '\\', '$', '==', '...', '(', ')', '{', '}', ',', '"', "'s", "'ll", '-', '#'),
      fc.constantFrom('the', 'The', 'THE', 'camelCase', 'snake_case', 'x', 'é', 'ü', 'naïve', '中文', '日本語', 'Ελληνικά', '🙂', '👍🏽', 'e\u0301', '\u0301', '<|endoftext|>'),
      fc.integer({ min: 0, max: 1e9 }).map(String),
      fc.string({ maxLength: 6 }),
    ),
    { maxLength: 120 },
  )
  .map((parts) => parts.join(''))
  // Well under LONG_RUN bytes of any kind in a row (60 characters are at most 240 bytes).
  .filter((text) => !/[\p{L}\p{M}]{60}|\s{60}|[^\s\p{L}\p{N}]{60}|[\r\n/]{60}/u.test(text));

describe('token counts (o200k): exact on ordinary text, linear on any text', () => {
  test('every text of the benchmark corpus counts exactly as gpt-tokenizer counts it', () => {
    const texts = corpusTexts();
    assert.ok(texts.length > 500);
    const differ = texts.filter((t) => countTokens(t) !== exact(t));
    assert.deepEqual(differ.map((t) => t.slice(0, 80)), []);
  });

  test('random ordinary text counts exactly, cut into parts anywhere a word ends before a space (property)', () => {
    fc.assert(
      fc.property(ordinaryText, fc.integer({ min: 1, max: 64 }), (text, chunk) => {
        assert.equal(countTokens(text), exact(text));
        // The cuts every `chunk` characters (16,384 in use) are where o200k's pieces always end: exact too.
        assert.equal(countByPieces(text, exact, Number.POSITIVE_INFINITY, chunk), exact(text));
      }),
      { numRuns: 400 },
    );
  });

  test('a long run is counted within a token per cut (runs of one character exactly)', () => {
    const run = fc.record({
      before: ordinaryText,
      unit: fc.constantFrom('a', 'z', ' ', '\n', '\t', '$', '=', '\\', '/\n', '中', '🙂', 'ab', 'Xy', '-_', 'e\u0301'),
      repeat: fc.integer({ min: 1, max: 1500 }),
      after: ordinaryText,
    });
    fc.assert(
      fc.property(run, ({ before, unit, repeat, after }) => {
        const text = before + unit.repeat(repeat) + after;
        const cuts = Math.ceil(Buffer.byteLength(text) / LONG_RUN) + 1;
        assert.ok(Math.abs(countTokens(text) - exact(text)) <= cuts, `${countTokens(text)} against ${exact(text)}, ${cuts} cuts at most`);
      }),
      { numRuns: 150 },
    );
    for (const c of ['a', ' ', '\n', '=', '-', '$', '中']) {
      for (const n of [LONG_RUN * 4, LONG_RUN * 8 + 3]) assert.equal(countTokens(c.repeat(n)), exact(c.repeat(n)), `${JSON.stringify(c)} x ${n}`);
    }
  });

  test("special tokens' spellings are counted as text, never refused", () => {
    assert.equal(countTokens('a <|endoftext|> b <|endofprompt|>'), exact('a <|endoftext|> b <|endofprompt|>'));
    assert.equal(countPromptTokens([{ role: 'user', content: '<|endoftext|>' }]), 3 + 3 + exact('<|endoftext|>'));
  });

  test('up to a limit: exact at or under it, over it stops soon after (a whole prompt too)', () => {
    const prose = corpusTexts().join('\n');
    const all = countTokens(prose);
    assert.equal(countTokensUpTo(prose, all), all);
    assert.equal(countTokensUpTo(prose, Number.POSITIVE_INFINITY), all);
    const over = countTokensUpTo(prose, 1000);
    assert.ok(over > 1000 && over < 4000, `stopped at ${over}`);
    const messages = [{ role: 'user', content: prose }, { role: 'assistant', content: prose }];
    assert.equal(countPromptTokensUpTo(messages, undefined, 3 * all), countPromptTokens(messages));
    assert.ok(countPromptTokensUpTo(messages, undefined, 5000) > 5000);
  });

  // gpt-tokenizer merges each piece in time growing with the square of its length: 160,000 'a' took 20 s, 160,000
  // spaces 14 s (defect 2). A megabyte of each kind of run now takes milliseconds; the deadline is generous.
  test('a megabyte of each kind of run, and of a prompt, is counted within 10 s in all', async () => {
    const counts = await withinDeadline<number[]>('counting hostile runs', 10_000, { tokens: source('gateway/tokens.ts') }, `
      const runs = ['a', ' ', '\\n', '$', '\\\\', '中', '🙂', '/\\n', 'ab', 'e\\u0301', '<|endoftext|>'].map((u) => u.repeat(Math.ceil(160000 / u.length)));
      const counts = runs.map((r) => tokens.countTokens(r));
      const big = 'a'.repeat(1000000) + ' '.repeat(1000000) + '\\n'.repeat(1000000) + '$'.repeat(1000000);
      counts.push(tokens.countTokens(big));
      counts.push(tokens.countPromptTokens([{ role: 'user', content: big }, { role: 'assistant', content: runs.join('') }]));
      return counts;`);
    assert.equal(counts[0], 20_000, '160,000 a: 8 to a token');
    assert.equal(counts[1], 1250, '160,000 spaces: 128 to a token');
  });
});
