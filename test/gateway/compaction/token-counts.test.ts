import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PromptTokenCounter } from '../../../src/gateway/compaction/token-counts.ts';
import { countPromptTokens } from '../../../src/gateway/tokens.ts';

describe('prompt token counter', () => {
  test('counts exactly as countPromptTokens, cached or not', () => {
    const long = 'The quick brown fox jumps over the lazy dog. '.repeat(200);
    const messages = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: long }, { type: 'image_url', image_url: { url: 'data:x' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', tool_call_id: 'c', content: long },
    ];
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const counter = new PromptTokenCounter(2);
    for (let i = 0; i < 3; i++) {
      assert.equal(counter.prompt(messages, tools), countPromptTokens(messages, tools));
      assert.equal(counter.prompt(messages, undefined), countPromptTokens(messages));
    }
  });
});
