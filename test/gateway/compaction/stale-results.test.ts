import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Message } from '../../../src/gateway/compaction/messages.ts';
import { compactMessages, DEFAULT_COMPACT_OPTIONS } from '../../../src/gateway/compaction/planner.ts';
import { PromptTokenCounter } from '../../../src/gateway/compaction/token-counts.ts';
import { countPromptTokens } from '../../../src/gateway/tokens.ts';

const counter = new PromptTokenCounter();
const output = (n: number) => `run ${n}\n${'PASS test/unit/case.test.ts (12 ms) and more words here\n'.repeat(60)}done`;
/** A session of `n` tool calls, each with a result of about 800 tokens (and one short result). */
function session(n: number): Message[] {
  const messages: Message[] = [{ role: 'system', content: 'rules' }, { role: 'user', content: 'go' }];
  for (let i = 1; i <= n; i++) {
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"n":${i}}` } }] });
    messages.push({ role: 'tool', tool_call_id: `c${i}`, content: i === 2 ? 'ok' : output(i) });
  }
  return messages;
}
const options = { ...DEFAULT_COMPACT_OPTIONS, stale: { triggerTokens: 6000, keepResults: 3, batchTokens: 2000 } };
const agent = (messages: Message[]) => compactMessages(messages, undefined, { kind: 'agent' }, counter, options);

describe('stale-results', () => {
  test('under the trigger nothing is cleared; past it, whole blocks from the oldest, to the trigger or under', () => {
    assert.equal(agent(session(5)).applied.length, 0);
    const messages = session(20);
    const out = agent(messages);
    assert.deepEqual(out.applied, ['stale-results']);
    assert.ok(countPromptTokens(out.messages) <= 6000, `${countPromptTokens(out.messages)} tokens`);
    assert.equal(out.messages[3]!.content, '[gateway: the result of bash call c1 was cleared to save context; call the tool again if it is needed]');
    assert.equal(out.messages[5]!.content, 'ok', 'a short result is not worth clearing');
    assert.deepEqual(out.messages.slice(-6), messages.slice(-6), 'the 3 most recent results (the latest exchange among them) are whole');
    assert.ok(out.clearedBlocks >= 1);
  });

  test('a block once cleared stays cleared when the prompt shrinks (the previous latest exchange compacted a turn later)', () => {
    // Turn A ends with a result that repeats c1's output: whole while it is the latest exchange, a reference after.
    const turnA: Message[] = [...session(6)];
    turnA.push({ role: 'assistant', content: null, tool_calls: [{ id: 'c7', type: 'function', function: { name: 'bash', arguments: '{"n":1}' } }] });
    turnA.push({ role: 'tool', tool_call_id: 'c7', content: output(1) });
    const turnB: Message[] = [...turnA, { role: 'assistant', content: 'noted' }, { role: 'user', content: 'next' }];
    const trigger = countPromptTokens(turnA) - 400;
    const opts = { ...DEFAULT_COMPACT_OPTIONS, stale: { triggerTokens: trigger, keepResults: 2, batchTokens: 500 } };
    const a = compactMessages(turnA, undefined, { kind: 'agent' }, counter, opts);
    const b = compactMessages(turnB, undefined, { kind: 'agent' }, counter, opts);
    assert.equal(a.clearedBlocks, 1);
    assert.ok(countPromptTokens(b.messages) < trigger, 'turn B shrank below the trigger once c7 became a reference');
    assert.equal(b.clearedBlocks, 1, 'c1 stays cleared');
    assert.deepEqual(b.messages.slice(0, 4), a.messages.slice(0, 4), 'the prefix is sent again byte for byte');
  });

  test('batches: between two turns that clear as many blocks the bytes are the same; a new block clears at least the batch size', () => {
    let previous: ReturnType<typeof agent> | undefined;
    let batches = 0;
    for (let n = 8; n <= 40; n++) {
      const messages = session(n);
      const out = agent(messages);
      if (previous && out.clearedBlocks === previous.clearedBlocks) {
        const shared = previous.messages.length - 2; // the previous latest exchange aside
        assert.deepEqual(out.messages.slice(0, shared), previous.messages.slice(0, shared), `turn ${n}`);
      } else if (previous) {
        batches++;
        const newlyCleared = out.messages.filter((m, k) => String(m.content).includes('was cleared') && !String(previous!.messages[k]?.content).includes('was cleared'));
        const tokens = newlyCleared.reduce((sum, m) => sum + countPromptTokens([messages[out.origin[out.messages.indexOf(m)]!]!]), 0);
        assert.ok(tokens >= 2000, `turn ${n}: ${tokens} tokens cleared at once`);
      }
      previous = out;
    }
    assert.ok(batches >= 3 && batches <= 16, `${batches} batches over 33 turns`);
  });

  test('the latest exchange is never cleared, even when it alone is past the trigger', () => {
    const messages = session(3);
    messages[messages.length - 1] = { ...messages[messages.length - 1]!, content: output(9).repeat(20) };
    const out = compactMessages(messages, undefined, { kind: 'agent' }, counter, { ...options, stale: { triggerTokens: 1000, keepResults: 0, batchTokens: 500 } });
    assert.equal(out.messages.at(-1), messages.at(-1));
    assert.match(String(out.messages[3]!.content), /was cleared/);
  });
});
