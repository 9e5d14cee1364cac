import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Message } from '../../../../src/gateway/compaction/messages.ts';
import type { CompactMode } from '../../../../src/gateway/compaction/mode.ts';
import { compactMessages, DEFAULT_COMPACT_OPTIONS } from '../../../../src/gateway/compaction/planner.ts';
import { PromptTokenCounter } from '../../../../src/gateway/compaction/token-counts.ts';
import type { JsonObject } from '../../../../src/gateway/providers/json.ts';
import { holdsThinking, writeBack } from '../../../../src/gateway/surfaces/messages/compacted.ts';
import { stagesForm } from '../../../../src/gateway/surfaces/messages/stages-form.ts';

const counter = new PromptTokenCounter();
const EPHEMERAL = { type: 'ephemeral' };
const output = (n: number, lines = 60) => `run ${n}\n${'PASS test/unit/case.test.ts (12 ms) and more words here\n'.repeat(lines)}done`;

interface Shape {
  turns: number;
  thinking: boolean;
  /** Per turn: the result's lines, whether it is an error, whether its content is blocks. */
  results: { lines: number; error: boolean; blocks: boolean; text: boolean }[];
  /** Assistant text with runs of spaces (whitespace normalization acts on it). */
  spaced: boolean;
}

/** A Claude-Code-shaped Messages body: system and tools with breakpoints, tool-use turns (thinking first when on), the newest block marked. */
function session(shape: Shape): JsonObject {
  const messages: JsonObject[] = [{ role: 'user', content: [{ type: 'text', text: 'fix the tests' }] }];
  for (let i = 0; i < shape.turns; i++) {
    const r = shape.results[i % shape.results.length]!;
    const content: JsonObject[] = [];
    if (shape.thinking) content.push({ type: 'thinking', thinking: '', signature: `sig-${i}` });
    if (r.text) content.push({ type: 'text', text: shape.spaced ? `Running the tests (${i})   \n\n\n\nnow  ` : `Running the tests (${i})` });
    content.push({ type: 'tool_use', id: `toolu_${i}`, name: i % 2 === 0 ? 'Bash' : 'Read', input: { command: `npm test -- ${i}` } });
    messages.push({ role: 'assistant', content });
    const text = output(i, r.lines);
    const result: JsonObject = { type: 'tool_result', tool_use_id: `toolu_${i}`, content: r.blocks ? [{ type: 'text', text }] : text };
    if (r.error) result['is_error'] = true;
    messages.push({ role: 'user', content: [result] });
  }
  const last = messages.at(-1)!['content'] as JsonObject[];
  last[last.length - 1] = { ...last[last.length - 1], cache_control: EPHEMERAL };
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 32000,
    system: [
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1' },
      { type: 'text', text: 'You are Claude Code.', cache_control: EPHEMERAL },
    ],
    tools: [
      { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
      { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } }, cache_control: EPHEMERAL },
    ],
    messages,
    thinking: { type: 'adaptive' },
    stream: true,
  };
}

const shapes = fc.record({
  turns: fc.integer({ min: 1, max: 14 }),
  thinking: fc.boolean(),
  results: fc.array(fc.record({ lines: fc.integer({ min: 1, max: 200 }), error: fc.boolean(), blocks: fc.boolean(), text: fc.boolean() }), { minLength: 1, maxLength: 5 }),
  spaced: fc.boolean(),
});
const modes = fc.constantFrom<Exclude<CompactMode, { kind: 'off' }>>({ kind: 'safe' }, { kind: 'agent' }, { kind: 'aggressive' }, { kind: 'budget', tokens: 3000 });
const stale = { ...DEFAULT_COMPACT_OPTIONS, stale: { triggerTokens: 1500, keepResults: 1, batchTokens: 600 } };

function compactBody(body: JsonObject, mode: Exclude<CompactMode, { kind: 'off' }>) {
  const form = stagesForm(body);
  // Aggressive with the default trigger, so that tool outputs are cut rather than all cleared first.
  const options = mode.kind === 'aggressive' ? DEFAULT_COMPACT_OPTIONS : stale;
  const compacted = compactMessages(form.chat.messages as Message[], form.chat['tools'], mode, counter, options);
  const written = writeBack(body, form, compacted.messages, compacted.origin);
  return { form, compacted, written };
}

/** tool_use ids and tool_result ids of a body's messages. */
function pairs(messages: unknown[]): { uses: string[]; results: string[] } {
  const uses: string[] = [];
  const results: string[] = [];
  for (const m of messages as JsonObject[]) {
    for (const b of Array.isArray(m['content']) ? (m['content'] as JsonObject[]) : []) {
      if (b['type'] === 'tool_use') uses.push(b['id'] as string);
      if (b['type'] === 'tool_result') results.push(b['tool_use_id'] as string);
    }
  }
  return { uses, results };
}

describe('compaction written back into a Messages body', () => {
  test('nothing changed: the client\'s own body, the same object', () => {
    const body = session({ turns: 3, thinking: true, results: [{ lines: 2, error: false, blocks: true, text: true }], spaced: false });
    const form = stagesForm(body);
    const written = writeBack(body, form, form.chat.messages, form.chat.messages.map((_, i) => i));
    assert.equal(written.body, body);
    assert.equal(written.messages, form.chat.messages);
  });

  test('properties: exact write-back on random Claude-Code-shaped sessions in every mode', () => {
    const applied = new Set<string>();
    fc.assert(
      fc.property(shapes, modes, (shape, mode) => {
        const body = session(shape);
        const frozen = JSON.stringify(body);
        const { form, compacted, written } = compactBody(body, mode);
        assert.equal(JSON.stringify(body), frozen, 'the client\'s body is never changed in place');
        for (const s of compacted.applied) applied.add(s);
        if (compacted.applied.length === 0) {
          assert.equal(written.body, body, 'compaction changed nothing: the client\'s body itself');
          return;
        }
        const sent = written.body['messages'] as JsonObject[];
        const client = body['messages'] as JsonObject[];
        // What the stages account for is what is sent: the stages form of the sent body is the kept messages.
        assert.deepEqual(stagesForm(written.body).chat.messages, written.messages);
        // Every field but messages is the client's own.
        for (const key of Object.keys(body)) if (key !== 'messages') assert.equal(written.body[key], body[key]);
        assert.deepEqual(Object.keys(written.body), Object.keys(body), 'the keys keep their order');
        // Thinking: the latest assistant turn is the client's own object; any assistant message holding thinking is sent as it was or not at all.
        const latest = client.findLastIndex((m) => m['role'] === 'assistant');
        if (latest >= 0 && holdsThinking(client[latest])) {
          assert.ok(sent.includes(client[latest]!), 'the latest assistant turn, with its thinking, is sent as the same object');
          const sentLatest = sent.findLast((m) => m['role'] === 'assistant')!;
          const thinking = (m: JsonObject) => JSON.stringify((m['content'] as JsonObject[]).filter((b) => b['type'] === 'thinking'));
          assert.equal(thinking(sentLatest), thinking(client[latest]!), 'its thinking blocks byte for byte');
        }
        for (const m of sent) if (holdsThinking(m)) assert.ok(client.includes(m), 'a message with thinking blocks is never rewritten');
        // Pairs: every tool_use sent has its result sent, and the reverse.
        const { uses, results } = pairs(sent);
        assert.deepEqual([...uses].sort(), [...results].sort());
        // Unchanged blocks are the client's objects; a changed tool result keeps every field but its content.
        for (const m of sent) {
          const original = client.find((c) => c === m || (c['role'] === m['role'] && sameIds(c, m)));
          assert.ok(original, 'every message sent is one of the client\'s');
          const before = original['content'] as JsonObject[];
          (m['content'] as JsonObject[]).forEach((block, j) => {
            if (block === before[j]) return;
            const { content: _a, text: _b, ...rest } = block;
            const { content: _c, text: _d, ...restBefore } = before[j]!;
            assert.deepEqual(rest, restBefore, 'only content (tool results) or text (text blocks) changed');
          });
        }
        // Roles alternate as they did.
        const roles = sent.map((m) => m['role']);
        for (let k = 1; k < roles.length; k++) assert.notEqual(roles[k], roles[k - 1], 'two turns of one role never meet');
        assert.ok(form.chat.messages.length >= written.messages.length);
      }),
      { numRuns: 150 },
    );
    for (const s of ['whitespace', 'stale-results', 'tool-output', 'drop-turns']) assert.ok(applied.has(s), `${s} was exercised`);
  });

  test('a cleared tool result keeps tool_use_id, is_error and the client\'s breakpoint; its content is the note', () => {
    const body = session({ turns: 8, thinking: false, results: [{ lines: 60, error: true, blocks: false, text: false }], spaced: false });
    const marked = ((body['messages'] as JsonObject[])[2]!['content'] as JsonObject[])[0]!;
    marked['cache_control'] = { type: 'ephemeral', ttl: '1h' };
    const { compacted, written } = compactBody(body, { kind: 'agent' });
    assert.deepEqual(compacted.applied, ['stale-results']);
    const result = ((written.body['messages'] as JsonObject[])[2]!['content'] as JsonObject[])[0]!;
    assert.match(String(result['content']), /^\[gateway: the result of Bash call toolu_0 was cleared/);
    assert.equal(result['tool_use_id'], 'toolu_0');
    assert.equal(result['is_error'], true);
    assert.deepEqual(result['cache_control'], { type: 'ephemeral', ttl: '1h' });
    assert.equal(typeof result['content'], 'string', 'a string content stays a string');
  });

  test('an assistant message holding thinking is never rewritten: its whitespace change is undone in the stages form too', () => {
    const body = session({ turns: 2, thinking: true, results: [{ lines: 2, error: false, blocks: true, text: true }], spaced: true });
    const { compacted, written } = compactBody(body, { kind: 'safe' });
    assert.deepEqual(compacted.applied, ['whitespace']);
    assert.equal(written.body, body, 'nothing could be written: the client\'s body');
    assert.deepEqual(written.messages, stagesForm(body).chat.messages, 'the client\'s messages put back');
  });

  test('without thinking, an assistant\'s text blocks get their new text, its tool_use blocks stay the same objects', () => {
    const body = session({ turns: 3, thinking: false, results: [{ lines: 2, error: false, blocks: true, text: true }], spaced: true });
    const { written } = compactBody(body, { kind: 'safe' });
    const sent = (written.body['messages'] as JsonObject[])[1]!['content'] as JsonObject[];
    const before = (body['messages'] as JsonObject[])[1]!['content'] as JsonObject[];
    assert.equal(sent[0]!['text'], 'Running the tests (0)\n\nnow');
    assert.equal(sent[1], before[1], 'the tool_use block is the client\'s object');
  });

  test('a drop that would part a tool_use from its result, or one that takes part of a turn, is undone', () => {
    const body = session({ turns: 4, thinking: false, results: [{ lines: 30, error: false, blocks: true, text: false }], spaced: false });
    const form = stagesForm(body);
    const all = form.chat.messages;
    // Stages form: system, user, then (assistant, tool) per turn. Drop turn 1's assistant only: its result would be orphaned.
    const keep = all.map((_, i) => i).filter((i) => i !== 4);
    const written = writeBack(body, form, keep.map((i) => all[i]), keep);
    assert.equal(written.body, body);
    assert.equal(written.messages.length, all.length, 'every message put back');
    // Dropping turn 1 whole (assistant and result) is written: two Anthropic messages fewer.
    const whole = all.map((_, i) => i).filter((i) => i !== 4 && i !== 5);
    const dropped = writeBack(body, form, whole.map((i) => all[i]), whole);
    assert.equal((dropped.body['messages'] as unknown[]).length, (body['messages'] as unknown[]).length - 2);
    assert.deepEqual(stagesForm(dropped.body).chat.messages, dropped.messages);
  });
});

/** Two messages hold the same tool ids (a rewritten copy of the client's message). */
function sameIds(a: JsonObject, b: JsonObject): boolean {
  const ids = (m: JsonObject) => JSON.stringify(pairs([m]));
  return ids(a) === ids(b);
}
