import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { ChatRequest } from '../../../src/gateway/providers/types.ts';
import { classify, distinctCodeWords } from '../../../src/gateway/routing/classifier.ts';
import { hasIndentedCodeLine, hasInlineMath, hasSelectFrom } from '../../../src/gateway/routing/classifier-scans.ts';
import { promptShape } from '../../../src/gateway/routing/prompt-shape.ts';
import { source, withinDeadline } from '../../helpers/deadline.ts';
import { type LabelledPrompt, labelledPrompts } from './routing-fixture.ts';

const tierOf = (p: LabelledPrompt) =>
  classify(promptShape({ model: 'auto', messages: p.messages, tools: p.tools, response_format: p.response_format } as ChatRequest)).tier;

function score(prompts: LabelledPrompt[]) {
  const easy = prompts.filter((p) => p.label === 'easy');
  const hard = prompts.filter((p) => p.label === 'hard');
  const easyCheap = easy.filter((p) => tierOf(p) === 1);
  const hardCapable = hard.filter((p) => tierOf(p) >= 2);
  return {
    easy: easyCheap.length / easy.length,
    hard: hardCapable.length / hard.length,
    line: `easy to tier 1: ${easyCheap.length}/${easy.length}, hard to tier 2+: ${hardCapable.length}/${hard.length}`,
    missedHard: hard.filter((p) => !hardCapable.includes(p)).map((p) => p.id),
    missedEasy: easy.filter((p) => !easyCheap.includes(p)).map((p) => p.id),
  };
}

/**
 * The classifier on bench/data/routing-labelled.jsonl. Measured (this
 * commit): tuning split 74/74 easy to tier 1 and 63/63 hard to tier 2 or
 * above (the signals were tuned on it, so that is a fit, not a forecast);
 * holdout split (written after the tuning, never tuned on) 12/12 easy, 6/12
 * hard. docs/gateway-routing.md discusses what the holdout says.
 */
describe('the request classifier on the labelled prompts', () => {
  const prompts = labelledPrompts();

  test('the set is labelled in both splits', () => {
    for (const split of ['tuning', 'holdout'] as const) {
      const part = prompts.filter((p) => p.split === split);
      assert.ok(part.some((p) => p.label === 'easy') && part.some((p) => p.label === 'hard'), split);
    }
  });

  test('tuning split: at least 90% of easy prompts go to the cheap tier, every hard one to a capable tier', (t) => {
    const s = score(prompts.filter((p) => p.split === 'tuning'));
    t.diagnostic(s.line);
    assert.ok(s.easy >= 0.9, `${s.line}; easy sent up: ${s.missedEasy.join(', ')}`);
    assert.equal(s.hard, 1, `${s.line}; hard sent to tier 1: ${s.missedHard.join(', ')}`);
  });

  test('holdout split: easy prompts stay cheap; hard recall at least what was measured when it was written', (t) => {
    const s = score(prompts.filter((p) => p.split === 'holdout'));
    t.diagnostic(s.line);
    assert.ok(s.easy >= 0.9, s.line);
    assert.ok(s.hard >= 0.5, `${s.line}; missed: ${s.missedHard.join(', ')}`);
  });

  test('signals: each kind of difficulty is named, a plain question has none', () => {
    const signals = (body: Record<string, unknown>) => classify(promptShape({ model: 'auto', messages: [], ...body } as ChatRequest)).signals;
    assert.deepEqual(signals({ messages: [{ role: 'user', content: 'What is the capital of France?' }] }), []);
    assert.deepEqual(signals({ messages: [{ role: 'user', content: 'Fix this:\n```js\nlet x = 1;\n```' }] }), ['code']);
    assert.deepEqual(signals({ messages: [{ role: 'user', content: 'Prove that 17 is prime.' }] }), ['math']);
    assert.ok(signals({ messages: [{ role: 'user', content: 'hi' }], tools: [{}, {}, {}, {}, {}] }).includes('tools'));
    assert.ok(signals({ messages: [{ role: 'user', content: 'x'.repeat(7000) }] }).includes('long'));
    assert.ok(signals({ messages: Array.from({ length: 12 }, () => ({ role: 'user', content: 'ok' })) }).includes('deep'));
    const schema = { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string' } } } } };
    assert.ok(signals({ messages: [{ role: 'user', content: 'hi' }], response_format: schema }).includes('structured'));
    assert.deepEqual(signals({ messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_object' } }), [], 'json_object alone is no harder');
  });

  test('a megabyte transcript is scanned in bounded slices (the tier comes from its size and shape)', () => {
    const long = 'lorem ipsum dolor sit amet '.repeat(40_000);
    const d = classify(promptShape({ model: 'auto', messages: [{ role: 'user', content: long }] }));
    assert.ok(d.signals.includes('long'));
    assert.ok(d.tier >= 2);
  });
});

/** The classifier's patterns as they were written before they became scans (classifier-scans.ts). */
const PATTERNS = {
  indented: /^\s{4,}\S.*[;{}]\s*$/m,
  selectFrom: /\bSELECT\s[\s\S]{1,300}?\sFROM\s/,
  inlineMath: /\$[^$\n]*[\\^_=][^$\n]*\$/,
  codeWords:
    /\b(?:function|class|method|compile[rd]?|runtime|async|thread|mutex|pointer|recursi\w+|iterative|algorithm|regex|sql|postgres\w*|mysql|database|index(?:es)?|api endpoint|bug|typescript|javascript|python|rust|golang|java|c\+\+|kotlin|bash|docker|kubernetes|kubectl|pod|node\.js|react|terraform|vpc|subnets?|nginx|load balancer|protocol|invariants?|data structure|memoi[sz]\w*|re-?renders?|file handles?|leaks?)\b|[a-z_]\w*\([^)]*\)\s*[{;:]|=>|::|#include/gi,
};

/** The old count of distinct matches of a /g pattern, up to 2. */
function distinctMatches(text: string, pattern: RegExp): number {
  pattern.lastIndex = 0;
  let first: string | undefined;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    const word = m[0].toLowerCase();
    if (first === undefined) first = word;
    else if (word !== first) return 2;
  }
  return first === undefined ? 0 : 1;
}

describe('the classifier: linear', () => {
  const piece = fc.constantFrom(' ', '  ', '\t', '\n', '\r', '\u2028', '\u00a0', 'a', 'Z', '_', '9', ';', '{', '}', ':', '(', ')', 'SELECT', 'FROM', 'select', '$', '\\', '^', '=', 'function', 'bug', 'foo', '=>', '::', '#include', 'é');
  const text = fc.array(piece, { maxLength: 40 }).map((p) => p.join(''));

  test('each scan answers what its pattern did, on random text (property)', () => {
    const runs = { numRuns: 5000 };
    fc.assert(fc.property(text, (s) => hasIndentedCodeLine(s) === PATTERNS.indented.test(s)), runs);
    fc.assert(fc.property(text, (s) => hasSelectFrom(s) === PATTERNS.selectFrom.test(s)), runs);
    fc.assert(fc.property(text, (s) => hasInlineMath(s) === PATTERNS.inlineMath.test(s)), runs);
    fc.assert(fc.property(text, (s) => distinctCodeWords(s) === distinctMatches(s, PATTERNS.codeWords)), runs);
    const distance = fc.record({ before: fc.integer({ min: 0, max: 3 }), gap: fc.integer({ min: 0, max: 400 }) });
    fc.assert(
      fc.property(distance, ({ before, gap }) => {
        const s = `${'x'.repeat(before)} SELECT ${'y'.repeat(gap)} FROM z SELECT a`;
        return hasSelectFrom(s) === PATTERNS.selectFrom.test(s);
      }),
    );
  });

  // With the patterns, 12,000 newlines over three messages cost 217 to 426 ms a request (defect 3), a few ms for any
  // of these texts. Each is scanned in its bounded slices (12,000 characters at most); the best of five runs is timed.
  test('hostile text costs what ordinary text does: under 25 ms a call', async () => {
    const costs = await withinDeadline<[string, number][]>('classifying hostile text', 20_000, {
      classifier: source('gateway/routing/classifier.ts'),
      shape: source('gateway/routing/prompt-shape.ts'),
    }, `
      const units = ['\\n', ' ', '\\t', '$', '$_', '\\\\', 'SELECT ', 'a(', '(a', '\\n    x {', '    x;', 'a ^ 1', '2*3', 'write a ', 'aA_', 'é'];
      const costs = [];
      for (const unit of units) {
        const s = unit.repeat(Math.ceil(12000 / unit.length));
        const body = { model: 'auto', messages: [{ role: 'system', content: s }, { role: 'user', content: s }, { role: 'assistant', content: s }] };
        const prompt = shape.promptShape(body);
        let best = Infinity;
        for (let i = 0; i < 5; i++) {
          const started = performance.now();
          classifier.classify(prompt);
          best = Math.min(best, performance.now() - started);
        }
        costs.push([unit, best]);
      }
      return costs;`);
    const slow = costs.filter(([, ms]) => ms > 25).map(([unit, ms]) => `${JSON.stringify(unit)}: ${ms.toFixed(1)} ms`);
    assert.deepEqual(slow, []);
  });
});
