import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type CompactionCase, compactionProblems } from '../../../src/gateway/compaction/invariants.ts';
import type { Message } from '../../../src/gateway/compaction/messages.ts';

const messages: Message[] = [
  { role: 'system', content: 'rules' },
  { role: 'user', content: 'first' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
  { role: 'tool', tool_call_id: 'c1', content: 'result one' },
  { role: 'assistant', content: 'thinking out loud' },
  { role: 'user', content: 'latest' },
];
const tools = [{ type: 'function', function: { name: 'f' } }];
const all = messages.map((_, i) => i);

/** The problems of sending `sent` (with its origins) for `messages` in `mode`. */
const problems = (sent: Message[], origin: number[], extra: Partial<CompactionCase> = {}) =>
  compactionProblems({ mode: { kind: 'aggressive' }, before: { messages, tools }, after: { messages: sent, tools }, origin, ...extra });

describe('the invariants checker finds each kind of breakage', () => {
  test('a faithful compaction has none', () => {
    const sent = messages.map((m, i) => (i === 3 ? { ...m, content: 'result' } : m));
    assert.deepEqual(problems(sent, all), []);
    assert.deepEqual(problems([...messages.slice(0, 2), ...messages.slice(4)], [0, 1, 4, 5]), [], 'a whole pair dropped');
  });

  test('each broken promise is named', () => {
    const cases: [Message[], number[], RegExp, Partial<CompactionCase>?][] = [
      [messages.map((m, i) => (i === 0 ? { ...m, content: 'other rules' } : m)), all, /message 0 \(system\) was changed/],
      [messages.map((m, i) => (i === 5 ? { ...m, content: 'latest ' } : m)), all, /message 5 \(user\) was changed/],
      [messages.slice(0, 5), [0, 1, 2, 3, 4], /message 5 \(user\) was dropped/],
      [[messages[0]!, ...messages.slice(2)], [0, 2, 3, 4, 5], /message 1 \(user\) was dropped/],
      [messages.map((m, i) => (i === 3 ? { ...m, content: '   ' } : m)), all, /message 3 was emptied/],
      [messages.map((m, i) => (i === 4 ? { ...m, content: 'thinking' } : m)), all, /message 4 \(the latest exchange\) was changed beyond its whitespace/],
      [[...messages.slice(0, 4), messages[5]!], [0, 1, 2, 3, 5], /message 4 \(the latest exchange\) was dropped/],
      [[...messages.slice(0, 3), ...messages.slice(4)], [0, 1, 2, 4, 5], /tool call c1: its result was dropped/],
      [[...messages.slice(0, 2), ...messages.slice(3)], [0, 1, 3, 4, 5], /tool call c1: its call was dropped/],
      [messages.map((m, i) => (i === 3 ? { ...m, tool_call_id: 'c9' } : m)), all, /message 3: a field other than content changed/],
      [
        messages.map((m, i) => (i === 2 ? { ...m, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":' } }] } : m)),
        all,
        /tool call 0's arguments are no longer JSON/,
      ],
      [[messages[1]!, messages[0]!, ...messages.slice(2)], [1, 0, 2, 3, 4, 5], /out of order/],
      [messages, all, /over the budget of 100/, { mode: { kind: 'budget', tokens: 100 }, promptTokens: 120 }],
      [messages.slice(), all, /off changed the messages/, { mode: { kind: 'off' } }],
    ];
    for (const [sent, origin, expected, extra] of cases) {
      const found = problems(sent, origin, extra);
      assert.ok(found.some((p) => expected.test(p)), `${expected}: got ${JSON.stringify(found)}`);
    }
    const changedTools = compactionProblems({ mode: { kind: 'safe' }, before: { messages, tools }, after: { messages, tools: [] }, origin: all });
    assert.deepEqual(changedTools, ['the tool definitions changed']);
  });
});
