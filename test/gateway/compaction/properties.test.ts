import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { groupUnits } from '../../../src/gateway/compaction/messages.ts';
import { compactionProblems } from '../../../src/gateway/compaction/invariants.ts';
import type { CompactMode } from '../../../src/gateway/compaction/mode.ts';
import { compactMessages } from '../../../src/gateway/compaction/planner.ts';
import { PromptTokenCounter } from '../../../src/gateway/compaction/token-counts.ts';
import { countPromptTokens } from '../../../src/gateway/tokens.ts';
import { conversation, turns } from './conversations.ts';

const counter = new PromptTokenCounter();
const RUNS = { numRuns: 80 };
/** Strategies seen applied across the runs: each must show up, or the generator does not exercise it. */
const seen = new Set<string>();

function checkAll(messages: Parameters<typeof compactMessages>[0], tools: unknown, mode: Exclude<CompactMode, { kind: 'off' }>) {
  const frozen = structuredClone(messages);
  const out = compactMessages(messages, tools, mode, counter);
  assert.deepEqual(messages, frozen, 'the request is never modified in place');
  const promptTokens = countPromptTokens(out.messages, tools);
  const problems = compactionProblems({
    mode,
    before: { messages, tools },
    after: { messages: out.messages, tools },
    origin: out.origin,
    promptTokens,
    unreachable: out.unmet !== undefined,
  });
  assert.deepEqual(problems, []);
  assert.equal(out.savedTokens, countPromptTokens(messages, tools) - promptTokens, 'the saving is countPromptTokens before minus after');
  if (mode.kind === 'budget') {
    assert.equal(out.promptTokens, promptTokens, 'the planner counts as countPromptTokens does');
    if (out.unmet !== undefined) assert.ok(out.unmet > mode.tokens);
  }
  for (const s of out.applied) seen.add(s);
  if (out.applied.length === 0) assert.equal(out.messages, messages, 'nothing applied: the same array');
  return out;
}

describe('compaction invariants on random conversations', () => {
  test('safe: every invariant holds; tool outputs are never cut', () => {
    fc.assert(
      fc.property(conversation, ({ messages, tools }) => {
        const out = checkAll(messages, tools, { kind: 'safe' });
        assert.ok(!out.applied.includes('tool-output') && !out.applied.includes('drop-turns'));
        assert.equal(out.messages.length, messages.length, 'safe drops nothing');
      }),
      RUNS,
    );
  });

  test('aggressive: every invariant holds; nothing is dropped', () => {
    fc.assert(
      fc.property(conversation, ({ messages, tools }) => {
        const out = checkAll(messages, tools, { kind: 'aggressive' });
        assert.equal(out.messages.length, messages.length);
      }),
      RUNS,
    );
  });

  test('a random budget: the prompt fits it, or the planner says it cannot and how small it got', () => {
    fc.assert(
      fc.property(conversation, fc.double({ min: 0.05, max: 1.2, noNaN: true }), ({ messages, tools }, fraction) => {
        const budget = Math.max(100, Math.round(countPromptTokens(messages, tools) * fraction));
        checkAll(messages, tools, { kind: 'budget', tokens: budget });
      }),
      RUNS,
    );
  });

  test('the generated conversations exercise every strategy', () => {
    assert.deepEqual([...seen].sort(), ['drop-turns', 'repeats', 'tool-output', 'whitespace']);
  });
});

describe('prefix stability', () => {
  for (const kind of ['safe', 'aggressive'] as const) {
    test(`${kind}: turn k's compacted messages are a prefix of turn k+1's`, () => {
      fc.assert(
        fc.property(conversation, ({ messages, tools }) => {
          let previous: unknown[] | undefined;
          for (const request of turns(messages)) {
            const sent = compactMessages(request, tools, { kind }, counter).messages;
            if (previous) assert.deepEqual(sent.slice(0, previous.length), previous);
            previous = sent;
          }
        }),
        { numRuns: 60 },
      );
    });
  }

  test('budget: between two turns with as many blocks dropped and no new user message, only the last exchange may leave the sent prefix', () => {
    fc.assert(
      fc.property(conversation, fc.integer({ min: 300, max: 4000 }), ({ messages, tools }, budget) => {
        let previous: { sent: unknown[]; origin: number[]; dropped: number; users: number; lastUnit: number } | undefined;
        for (const request of turns(messages)) {
          const out = compactMessages(request, tools, { kind: 'budget', tokens: budget }, counter);
          if (out.unmet !== undefined) {
            previous = undefined;
            continue;
          }
          const users = request.filter((m) => m.role === 'user').length;
          if (previous && out.droppedBlocks === previous.dropped && users === previous.users) {
            // The last exchange is always kept, so the one of the previous turn may only now fall into a dropped block.
            const keptNow = new Set(out.origin);
            const lastUnit = previous.lastUnit;
            const gone = previous.origin.filter((i) => !keptNow.has(i));
            assert.ok(gone.every((i) => i >= lastUnit), `only the previous last exchange may go (gone: ${gone}, it started at ${lastUnit})`);
            const expected = previous.sent.filter((_, k) => keptNow.has(previous!.origin[k]!));
            assert.deepEqual(out.messages.slice(0, expected.length), expected);
          }
          if (previous) assert.ok(out.droppedBlocks >= previous.dropped, 'blocks once dropped stay dropped');
          const units = groupUnits(request);
          previous = { sent: out.messages, origin: out.origin, dropped: out.droppedBlocks, users, lastUnit: units[units.length - 1]!.start };
        }
      }),
      { numRuns: 60 },
    );
  });
});
