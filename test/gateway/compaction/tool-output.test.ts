import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cutToolOutput, TOOL_OUTPUT_CUT } from '../../../src/gateway/compaction/tool-output.ts';

const log = (lines: number) => Array.from({ length: lines }, (_, i) => `line ${i}: ${'x'.repeat(40)}`).join('\n');

describe('tool-output strategy', () => {
  test('an output up to the threshold is left alone', () => {
    const text = 'y'.repeat(TOOL_OUTPUT_CUT.over);
    assert.equal(cutToolOutput(text), text);
  });

  test('a long output keeps whole lines at its head and tail, and says how much was removed', () => {
    const text = log(1000);
    const cut = cutToolOutput(text);
    assert.ok(cut.length < 2 * TOOL_OUTPUT_CUT.keep + 200, `${cut.length} characters`);
    assert.ok(cut.startsWith('line 0: '));
    assert.ok(cut.endsWith(`line 999: ${'x'.repeat(40)}`));
    const marker = /\n\[gateway: ([\d,]+) lines \(([\d,]+) characters\) removed from the middle of this output\]\n/.exec(cut);
    assert.ok(marker, cut.slice(2400, 2700));
    const [head, tail] = cut.split(marker[0]) as [string, string];
    assert.ok(text.startsWith(head) && text.endsWith(tail), 'head and tail are verbatim');
    assert.match(head.split('\n').at(-1)!, /^line \d+: x{40}$/, 'the head ends on a whole line');
    assert.match(tail.split('\n')[0]!, /^line \d+: x{40}$/, 'the tail starts on a whole line');
    const removed = text.length - head.length - tail.length;
    assert.equal(Number(marker[2]!.replace(/,/g, '')), removed);
    assert.equal(Number(marker[1]!.replace(/,/g, '')), text.slice(head.length, text.length - tail.length).split('\n').length - 1);
  });

  test('one very long line is cut inside it', () => {
    const text = `{"data":"${'z'.repeat(20_000)}"}`;
    const cut = cutToolOutput(text);
    assert.ok(cut.length < 2 * TOOL_OUTPUT_CUT.keep + 200);
    assert.ok(cut.startsWith('{"data":"zzz') && cut.endsWith('zzz"}'));
  });
});
