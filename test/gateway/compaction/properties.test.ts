import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { groupUnits } from '../../../src/gateway/compaction/messages.ts';
import { compactionProblems } from '../../../src/gateway/compaction/invariants.ts';
import type { CompactMode } from '../../../src/gateway/compaction/mode.ts';
import { type CompactOptions, compactMessages, DEFAULT_COMPACT_OPTIONS } from '../../../src/gateway/compaction/planner.ts';
import { latestExchangeStart } from '../../../src/gateway/compaction/messages.ts';
import { PromptTokenCounter } from '../../../src/gateway/compaction/token-counts.ts';
import { countPromptTokens } from '../../../src/gateway/tokens.ts';
import { conversation, turns } from './conversations.ts';

const counter = new PromptTokenCounter();
const RUNS = { numRuns: 80 };
/** Strategies seen applied across the runs: each must show up, or the generator does not exercise it. */
const seen = new Set<string>();

/** Stale clearing at the small sizes of generated conversations (the defaults would never trigger). */
const staleOptions = fc
  .record({ triggerTokens: fc.integer({ min: 200, max: 6000 }), keepResults: fc.integer({ min: 0, max: 4 }), batchTokens: fc.integer({ min: 100, max: 3000 }) })
  .map((stale): CompactOptions => ({ ...DEFAULT_COMPACT_OPTIONS, stale }));

function checkAll(messages: Parameters<typeof compactMessages>[0], tools: unknown, mode: Exclude<CompactMode, { kind: 'off' }>, options: CompactOptions = DEFAULT_COMPACT_OPTIONS) {
  const frozen = structuredClone(messages);
  const out = compactMessages(messages, tools, mode, counter, options);
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

  test('agent: every invariant holds; tool outputs are never cut, nothing is dropped', () => {
    fc.assert(
      fc.property(conversation, staleOptions, ({ messages, tools }, options) => {
        const out = checkAll(messages, tools, { kind: 'agent' }, options);
        assert.ok(!out.applied.includes('tool-output') && !out.applied.includes('drop-turns'));
        assert.equal(out.messages.length, messages.length);
      }),
      RUNS,
    );
  });

  test('aggressive: every invariant holds; nothing is dropped', () => {
    fc.assert(
      fc.property(conversation, staleOptions, ({ messages, tools }, options) => {
        const out = checkAll(messages, tools, { kind: 'aggressive' }, options);
        assert.equal(out.messages.length, messages.length);
      }),
      RUNS,
    );
  });

  test('a random budget: the prompt fits it, or the planner says it cannot and how small it got', () => {
    fc.assert(
      fc.property(conversation, fc.double({ min: 0.05, max: 1.2, noNaN: true }), staleOptions, ({ messages, tools }, fraction, options) => {
        const budget = Math.max(100, Math.round(countPromptTokens(messages, tools) * fraction));
        checkAll(messages, tools, { kind: 'budget', tokens: budget }, options);
      }),
      RUNS,
    );
  });

  test('the generated conversations exercise every strategy', () => {
    assert.deepEqual([...seen].sort(), ['drop-turns', 'repeats', 'stale-results', 'superseded-reads', 'tool-output', 'whitespace']);
  });
});

describe('prefix stability', () => {
  for (const kind of ['safe', 'agent', 'aggressive'] as const) {
    test(`${kind}: between turns that clear as many stale blocks, turn k's messages before its latest exchange are sent again byte for byte, but for reads superseded now`, () => {
      let compared = 0;
      fc.assert(
        fc.property(conversation, staleOptions, ({ messages, tools }, options) => {
          let previous: { sent: unknown[]; latest: number; cleared: number } | undefined;
          for (const request of turns(messages)) {
            const out = compactMessages(request, tools, { kind }, counter, options);
            if (kind !== 'agent' && kind !== 'aggressive') assert.equal(out.clearedBlocks, 0);
            // The client's history only grows: a block cleared once stays cleared (else the prefix would break twice).
            if (previous) assert.ok(out.clearedBlocks >= previous.cleared, `${out.clearedBlocks} blocks cleared after ${previous.cleared}`);
            if (previous && out.clearedBlocks === previous.cleared) {
              compared++;
              for (let k = 0; k < previous.latest; k++) {
                const now = JSON.stringify(out.messages[k]);
                if (now === JSON.stringify(previous.sent[k])) continue;
                // The one change allowed between batches: a read superseded by a read new in this turn.
                assert.match(String(textOfContent(out.messages[k]!.content)), /^\[gateway: superseded by the later /, `message ${k} changed`);
                assert.doesNotMatch(String(textOfContent((previous.sent[k] as { content: unknown }).content)), /^\[gateway: superseded/);
              }
            }
            previous = { sent: out.messages, latest: latestExchangeStart(request), cleared: out.clearedBlocks };
          }
        }),
        { numRuns: 60 },
      );
      assert.ok(compared > 100, `${compared} pairs of turns compared`);
    });
  }

  test('budget: between two turns with as many blocks dropped and no new user message, only the last exchange may leave the sent prefix', () => {
    fc.assert(
      fc.property(conversation, fc.integer({ min: 300, max: 4000 }), ({ messages, tools }, budget) => {
        let previous: { sent: unknown[]; origin: number[]; dropped: number; users: number; lastUnit: number; latest: number } | undefined;
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
            // (the latest exchange, from the last assistant message, is protected as the last unit is).
            const lastUnit = Math.min(previous.lastUnit, previous.latest);
            const gone = previous.origin.filter((i) => !keptNow.has(i));
            assert.ok(gone.every((i) => i >= lastUnit), `only the previous last exchange may go (gone: ${gone}, it started at ${lastUnit})`);
            // Before the previous latest exchange, the same bytes, but for reads superseded by a read new in this turn.
            const expected = previous.sent.filter((_, k) => keptNow.has(previous!.origin[k]!) && previous!.origin[k]! < previous!.latest);
            for (const [k, before] of expected.entries()) {
              if (JSON.stringify(out.messages[k]) === JSON.stringify(before)) continue;
              assert.match(textOfContent(out.messages[k]!.content), /^\[gateway: superseded by the later /, `message ${k} changed`);
            }
          }
          // Blocks dropped may come back when the prompt shrinks: the previous latest exchange, sent whole, is compacted
          // once it is not the latest, and a read may be superseded (docs/gateway-compaction.md).
          const units = groupUnits(request);
          previous = { sent: out.messages, origin: out.origin, dropped: out.droppedBlocks, users, lastUnit: units[units.length - 1]!.start, latest: latestExchangeStart(request) };
        }
      }),
      { numRuns: 60 },
    );
  });
});

function textOfContent(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p as { text?: string }).text ?? '').join('');
  return '';
}
