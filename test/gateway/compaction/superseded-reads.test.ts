import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Message } from '../../../src/gateway/compaction/messages.ts';
import { rewriteMessages } from '../../../src/gateway/compaction/rewrite.ts';
import { CONTAINS_BUDGET, canonicalJson, pays } from '../../../src/gateway/compaction/superseded-reads.ts';
import { PromptTokenCounter } from '../../../src/gateway/compaction/token-counts.ts';
import { DEFAULT_READ_TOOLS } from '../../../src/gateway/settings/compaction.ts';

const counter = new PromptTokenCounter();
const reads = { tools: new Set(DEFAULT_READ_TOOLS), counter };
const file = (version: number, lines = 400) => Array.from({ length: lines }, (_, i) => `export const value${i} = ${i * version};`).join('\n');
const read = (id: string, args: string, content: string, name = 'read_file'): Message[] => [
  { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: args } }] },
  { role: 'tool', tool_call_id: id, content },
];
const edit = (id: string, size = 1): Message[] => [
  { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'edit_file', arguments: JSON.stringify({ path: 'src/a.ts', patch: 'x'.repeat(size) }) } }] },
  { role: 'tool', tool_call_id: id, content: 'ok' },
];
const rewrite = (messages: Message[], tools = reads) => rewriteMessages(messages, { cutToolOutputs: false, reads: tools });

describe('superseded-reads', () => {
  test('a file read, edited and read again: the earlier read becomes a reference to the later call (arguments compared as canonical JSON), which stays whole', () => {
    const messages = [
      { role: 'user', content: 'fix it' },
      ...read('call_1', '{"path":"src/a.ts","limit":10}', file(1)),
      ...edit('call_2'),
      ...read('call_3', '{ "limit": 10, "path" : "src/a.ts" }', file(2)),
    ];
    const out = rewrite(messages);
    assert.equal(out.messages[2]!.content, '[gateway: superseded by the later read_file call call_3 below; removed]');
    assert.equal(out.messages[2]!.tool_call_id, 'call_1');
    assert.equal(out.messages[6], messages[6], 'the later read is whole');
    assert.deepEqual([...out.applied], ['superseded-reads']);
  });

  test('a result a later result contains whole is superseded; a tool that is not a read is left alone', () => {
    const part = file(1, 100);
    const messages = [{ role: 'user', content: 'go' }, ...read('call_1', '{"path":"a","range":[1,100]}', part, 'view'), ...read('call_2', '{"path":"a"}', file(1), 'view')];
    assert.match(String(rewrite(messages).messages[2]!.content), /^\[gateway: superseded by the later view call call_2 below/);
    const notReads = { tools: new Set(['read_file']), counter };
    assert.equal(rewrite(messages, notReads).applied.size, 0, 'view is not among this tenant’s read tools');
  });

  test('only when it pays: many tokens between the two reads keep the earlier one (the cache rewrite would cost more)', () => {
    const messages = [{ role: 'user', content: 'fix it' }, ...read('call_1', '{"path":"src/a.ts"}', file(1)), ...edit('call_2', 30_000), ...read('call_3', '{"path":"src/a.ts"}', file(2))];
    assert.equal(rewrite(messages).messages[2], messages[2]);
    // The rule: 0.1 x (removed + note) >= 1.25 x note + (1.25 - 0.1) x between, on Anthropic's prices.
    assert.ok(pays(1150, 0, 100) && !pays(1149, 0, 100));
    assert.ok(pays(23 * 50, 100, 0) && !pays(23 * 50 - 1, 100, 0));
  });

  test('identical reads are left to repeats (the later copy goes), and a result a copy points at is never superseded', () => {
    const messages = [
      { role: 'user', content: 'go' },
      ...read('call_1', '{"path":"a"}', file(1)),
      ...read('call_2', '{"path":"a"}', file(1)),
      ...read('call_3', '{"path":"a"}', file(2)),
      { role: 'assistant', content: 'Read.' },
    ];
    const out = rewrite(messages);
    assert.equal(out.messages[2], messages[2], 'the first copy stays: the reference in call_2 points at it');
    assert.match(String(out.messages[4]!.content), /^\[gateway: identical to the result of tool call call_1/);
    assert.equal(out.messages[6], messages[6]);
  });

  test('the decision depends on the history up to the superseding read only: later turns send the same bytes', () => {
    const base = [{ role: 'user', content: 'fix it' }, ...read('call_1', '{"path":"a"}', file(1)), ...edit('call_2'), ...read('call_3', '{"path":"a"}', file(2))];
    const later = [...base, ...edit('call_4', 50_000), ...read('call_5', '{"path":"b"}', file(3))];
    const a = rewrite([...base, { role: 'assistant', content: 'ok' }]).messages;
    const b = rewrite(later).messages;
    assert.deepEqual(b.slice(0, base.length), a.slice(0, base.length));
  });

  test('canonical JSON without recursion: 2,000 levels of nesting', () => {
    assert.equal(canonicalJson('{"b": [1, {"d": 2, "c": 3}], "a": "x"}'), '{"a":"x","b":[1,{"c":3,"d":2}]}');
    assert.equal(canonicalJson('not json'), 'not json');
    const deep = `${'['.repeat(2000)}${']'.repeat(2000)}`;
    assert.equal(canonicalJson(deep), deep);
    assert.ok(CONTAINS_BUDGET <= 4_000_000);
  });

  test('bounded on hostile content: 2,000 read results of 2,000 characters each, compared within the budget', () => {
    const messages: Message[] = [{ role: 'user', content: 'go' }];
    for (let i = 0; i < 2000; i++) messages.push(...read(`c${i}`, `{"path":"f${i}"}`, `${i}:${'y'.repeat(2000 + i)}`));
    const started = performance.now();
    rewrite(messages);
    const ms = performance.now() - started;
    assert.ok(ms < 3000, `${ms} ms`);
  });
});
