import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChatRequest } from '../../../src/gateway/providers/types.ts';
import { classify } from '../../../src/gateway/routing/classifier.ts';
import { promptShape } from '../../../src/gateway/routing/prompt-shape.ts';
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
