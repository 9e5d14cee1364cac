import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Message } from '../../../src/gateway/compaction/messages.ts';
import { MIN_REPEAT_CHARS } from '../../../src/gateway/compaction/repeats.ts';
import { rewriteMessages } from '../../../src/gateway/compaction/rewrite.ts';

const file = Array.from({ length: 40 }, (_, i) => `export const value${i} = ${i};`).join('\n');
const read = (id: string): Message[] => [
  { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{"path":"src/a.ts"}' } }] },
  { role: 'tool', tool_call_id: id, content: file },
];

describe('repeats strategy', () => {
  test('a file read twice: the second copy names the first by its tool call', () => {
    const messages: Message[] = [{ role: 'user', content: 'fix it' }, ...read('call_1'), ...read('call_2'), { role: 'assistant', content: 'Read.' }, { role: 'user', content: 'go on' }];
    const out = rewriteMessages(messages, { cutToolOutputs: false });
    assert.deepEqual([...out.applied], ['repeats']);
    assert.equal(out.messages[2], messages[2], 'the first copy is untouched');
    assert.equal(out.messages[4]!.content, '[gateway: identical to the result of tool call call_1 (read_file) above; this repeated copy was removed]');
    assert.equal(out.messages[4]!.tool_call_id, 'call_2', 'the result still answers its own call');
  });

  test('copies that differ only in formatting are repeats; a user message is never replaced, but may be referred to', () => {
    const pasted = `${file}\n`;
    const messages: Message[] = [
      { role: 'user', content: `Here is the file:\n${file}` },
      { role: 'user', content: file },
      ...read('call_1'),
      { role: 'user', content: file },
      { role: 'assistant', content: file.replace(/\n/g, '  \r\n') },
      { role: 'tool', tool_call_id: 'x', content: pasted },
      { role: 'assistant', content: 'Done.' },
    ];
    const out = rewriteMessages(messages, { cutToolOutputs: false });
    assert.match(String(out.messages[3]!.content), /^\[gateway: identical to the user message that begins "export const value0 = 0; export const/);
    assert.equal(out.messages[4], messages[4], 'user messages are the client’s words: never changed');
    assert.match(String(out.messages[5]!.content), /^\[gateway: identical to the user message/);
  });

  test('short texts are not worth a reference', () => {
    const short = 'ok,'.repeat(Math.floor(MIN_REPEAT_CHARS / 3) - 1);
    const messages: Message[] = [{ role: 'user', content: 'go' }, { role: 'assistant', content: short }, { role: 'assistant', content: short }];
    assert.equal(rewriteMessages(messages, { cutToolOutputs: false }).applied.size, 0);
  });

  test('only earlier messages count: the first copy stays whole whatever follows', () => {
    const messages: Message[] = [{ role: 'user', content: 'go' }, ...read('call_1')];
    const alone = rewriteMessages(messages, { cutToolOutputs: false }).messages;
    const more = rewriteMessages([...messages, ...read('call_2')], { cutToolOutputs: false }).messages;
    assert.deepEqual(more.slice(0, alone.length), alone);
  });
});

describe('repeats and the latest exchange', () => {
  test('a copy in the latest exchange arrives whole; on the next turn it is replaced', () => {
    const messages: Message[] = [{ role: 'user', content: 'fix it' }, ...read('call_1'), ...read('call_2')];
    const now = rewriteMessages(messages, { cutToolOutputs: false });
    assert.equal(now.messages[4], messages[4], 'the result the model is answering now is whole');
    assert.equal(now.applied.size, 0);
    const next = rewriteMessages([...messages, { role: 'assistant', content: 'Read.' }], { cutToolOutputs: false });
    assert.match(String(next.messages[4]!.content), /^\[gateway: identical to the result of tool call call_1/);
  });
});
