import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { groupUnits, type Message } from '../../../src/gateway/compaction/messages.ts';
import { compactMessages } from '../../../src/gateway/compaction/planner.ts';
import { PromptTokenCounter } from '../../../src/gateway/compaction/token-counts.ts';
import { countPromptTokens } from '../../../src/gateway/tokens.ts';
import { source, withinDeadline } from '../../helpers/deadline.ts';

const counter = new PromptTokenCounter();

/** An agent step: a call and its result, each result different (no repeats), about 150 tokens. */
const step = (n: number): Message[] => [
  { role: 'assistant', content: null, tool_calls: [{ id: `call_${n}`, type: 'function', function: { name: 'bash', arguments: `{"command":"step ${n}"}` } }] },
  { role: 'tool', tool_call_id: `call_${n}`, content: Array.from({ length: 12 }, (_, i) => `step ${n} output line ${i}: value=${n * 31 + i}`).join('\n') },
];

function session(steps: number): Message[] {
  const messages: Message[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Make the build pass.' },
  ];
  for (let n = 1; n <= steps; n++) messages.push(...step(n));
  return messages;
}

describe('drop-turns strategy', () => {
  test('units keep each tool call with its results, wherever they are', () => {
    const messages: Message[] = [
      { role: 'user', content: 'a' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'f', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: '1' },
      { role: 'user', content: 'interjection' },
      { role: 'tool', tool_call_id: 'b', content: '2' },
      { role: 'assistant', content: 'done' },
    ];
    assert.deepEqual(groupUnits(messages), [
      { start: 0, end: 1 },
      { start: 1, end: 5 },
      { start: 5, end: 6 },
    ]);
  });

  test('the oldest middle steps go first; system, first user, latest user and the last exchange stay', () => {
    const messages = [...session(30), { role: 'user', content: 'And the tests?' }, ...step(31)];
    const out = compactMessages(messages, undefined, { kind: 'budget', tokens: 2000 }, counter);
    assert.equal(out.unmet, undefined);
    assert.deepEqual(out.applied, ['drop-turns']);
    assert.ok(countPromptTokens(out.messages) <= 2000);
    assert.ok(countPromptTokens(out.messages) >= 2000 * 0.75 - 200, 'a block at most is given up');
    assert.deepEqual(out.origin.slice(0, 2), [0, 1]);
    assert.deepEqual(out.messages.slice(-3), messages.slice(-3));
    const kept = out.origin.slice(2, -3);
    assert.deepEqual(kept, Array.from({ length: kept.length }, (_, i) => messages.length - 3 - kept.length + i), 'what is kept is the newest, contiguous');
  });

  test('turn after turn, the cut moves only when a block more must go: most turns keep the previous prefix', () => {
    const budget = 2000;
    let previous: Message[] | undefined;
    let breaks = 0;
    let overBudgetTurns = 0;
    for (let steps = 1; steps <= 80; steps++) {
      const out = compactMessages(session(steps), undefined, { kind: 'budget', tokens: budget }, counter);
      assert.ok(countPromptTokens(out.messages) <= budget);
      if (out.droppedBlocks > 0) overBudgetTurns++;
      if (previous && JSON.stringify(out.messages.slice(0, previous.length)) !== JSON.stringify(previous)) breaks++;
      previous = out.messages;
    }
    // About 150 tokens a step and blocks of 500 tokens: one break every 3 to 4 steps, not one on every turn.
    assert.ok(overBudgetTurns > 60, `${overBudgetTurns} turns over budget`);
    assert.ok(breaks <= overBudgetTurns / 2.5, `${breaks} breaks in ${overBudgetTurns} turns`);
  });

  test('a budget below what is always kept is unmet, with the smallest size reached', () => {
    const messages = session(5);
    const out = compactMessages(messages, undefined, { kind: 'budget', tokens: 100 }, counter);
    assert.ok(out.unmet !== undefined && out.unmet > 100);
    assert.equal(out.unmet, countPromptTokens([...messages.slice(0, 2), ...messages.slice(-2)]));
  });

  test('a prompt that fits its budget keeps every turn', () => {
    const messages = session(3);
    const out = compactMessages(messages, undefined, { kind: 'budget', tokens: 50_000 }, counter);
    assert.deepEqual(out.applied, []);
    assert.equal(out.messages, messages);
  });
});

describe('drop-turns: planning is linear in the history', () => {
  // The tokens of the d oldest blocks were summed block by block on every question, and the planner asks for every
  // d up to the estimate: 160,000 messages of a block each cost 9 s. Asking for every d now costs one pass.
  test('the dropped tokens of every number of blocks, for 160,000 messages, within 10 s', async () => {
    const total = await withinDeadline<number>('asking the plan of 160,000 messages', 10_000, { drops: source('gateway/compaction/drop-turns.ts') }, `
      const messages = [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }];
      for (let i = 0; i < 160000; i++) messages.push({ role: i % 2 ? 'user' : 'assistant', content: 'm' });
      messages.push({ role: 'user', content: 'latest' });
      const plan = drops.planDrops(messages, messages.map(() => 30), 100);
      let sum = 0;
      for (let d = 1; d <= plan.blocks; d++) sum = plan.droppedTokens(d);
      return sum;`);
    // The last assistant message and the user message after it are the latest exchange, never dropped.
    assert.equal(total, (160_000 - 2) * 30, 'every other middle message is droppable, one block each');
  });
});
