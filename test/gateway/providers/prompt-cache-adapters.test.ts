import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adapterFor } from '../../../src/gateway/providers/adapters.ts';
import { anthropicAdapter } from '../../../src/gateway/providers/anthropic/index.ts';
import { findProvider, PROVIDERS } from '../../../src/gateway/providers/registry.ts';
import type { CallContext, ChatRequest, PromptCachePlan } from '../../../src/gateway/providers/types.ts';

/** Each adapter applies the prompt-cache plan in its own wire format, on the bytes it sends. */

const anthropic = anthropicAdapter('Anthropic', { anthropicDefaultMaxTokens: 1024 });
const ctx = (plan: PromptCachePlan | undefined): CallContext => ({
  model: 'claude-sonnet-4-5',
  apiKey: 'k',
  baseUrl: new URL('https://api.example/v1'),
  requestId: 'req_1',
  created: 1,
  promptCache: plan,
});
const plan = (messages: number[], system = false, tools = false, key?: string): PromptCachePlan => ({ breakpoints: { tools, system, messages }, key });
const CC = { type: 'ephemeral' };

const call = (id: string) => ({ id, type: 'function', function: { name: 'read', arguments: '{}' } });
const REQUEST: ChatRequest = {
  model: 'anthropic/claude-sonnet-4-5',
  tools: [
    { type: 'function', function: { name: 'read', parameters: { type: 'object', properties: {} } } },
    { type: 'function', function: { name: 'write', parameters: { type: 'object', properties: {} } } },
  ],
  messages: [
    { role: 'system', content: 'system one' },
    { role: 'user', content: 'task' },
    { role: 'assistant', content: 'looking', tool_calls: [call('c1')] },
    { role: 'tool', tool_call_id: 'c1', content: 'result one' },
    { role: 'user', content: 'and this' },
  ],
};

// biome-ignore lint/suspicious/noExplicitAny: the sent body is inspected field by field
const sent = (request: ChatRequest, p: PromptCachePlan | undefined): any => JSON.parse(anthropic.chatRequest(request, ctx(p)).body);
/** Where the cache_control blocks are, as paths. */
// biome-ignore lint/suspicious/noExplicitAny: walks the sent body
function marks(body: any): string[] {
  const out: string[] = [];
  const visit = (block: { cache_control?: unknown; content?: unknown }, path: string) => {
    if (block.cache_control) out.push(path);
    if (Array.isArray(block.content)) block.content.forEach((inner, k) => {
        visit(inner, `${path}.content.${k}`);
      });
  };
  body.tools?.forEach((t: object, i: number) => {
    visit(t, `tools.${i}`);
  });
  body.system?.forEach((b: object, i: number) => {
    visit(b, `system.${i}`);
  });
  body.messages.forEach((m: { content: object[] }, i: number) => {
    m.content.forEach((b, j) => {
      visit(b, `messages.${i}.${j}`);
    });
  });
  return out;
}

describe('Anthropic adapter: the plan as cache_control', () => {
  test('no plan: no cache_control', () => {
    assert.deepEqual(marks(sent(REQUEST, undefined)), []);
  });

  test('tools, system and messages: the last tool, the last system block, the last block of each message named', () => {
    const body = sent(REQUEST, plan([2, 4], true, true));
    // messages: user(task), assistant(text + tool_use), user(tool_result + "and this")
    assert.deepEqual(marks(body), ['tools.1', 'system.0', 'messages.1.1', 'messages.2.1']);
    assert.deepEqual(body.messages[1].content[1], { type: 'tool_use', id: 'c1', name: 'read', input: {}, cache_control: CC });
    assert.deepEqual(body.tools[1].cache_control, CC);
  });

  test('a tool result is marked on the tool_result block itself', () => {
    assert.deepEqual(marks(sent(REQUEST, plan([3]))), ['messages.2.0']);
  });

  test('a message that became no block: the breakpoint goes on the block before it', () => {
    const request = { ...REQUEST, messages: [...REQUEST.messages.slice(0, 4), { role: 'user', content: '' }] };
    assert.deepEqual(marks(sent(request, plan([4]))), ['messages.2.0']);
  });

  test("the client's own cache_control stays, counts against the four, and is not marked twice", () => {
    const request = {
      ...REQUEST,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'system one', cache_control: CC }] },
        { role: 'user', content: [{ type: 'text', text: 'a', cache_control: CC }, { type: 'text', text: 'b', cache_control: CC }] },
        ...REQUEST.messages.slice(2),
      ],
    };
    const body = sent(request, plan([2, 4], true, true));
    assert.deepEqual(marks(body), ['system.0', 'messages.0.0', 'messages.0.1', 'messages.2.1'], 'the latest message first; four in all');
  });

  test('none before a client breakpoint with a 1-hour TTL (longer TTLs must come first)', () => {
    const long = { type: 'ephemeral', ttl: '1h' };
    const request = { ...REQUEST, messages: [...REQUEST.messages.slice(0, 3), { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'r', cache_control: long }] }, REQUEST.messages[4]!] };
    const body = sent(request, plan([2, 4], true, true));
    assert.deepEqual(marks(body), ['messages.2.0.content.0', 'messages.2.1']);
    assert.deepEqual(body.messages[2].content[0].content[0].cache_control, long);
  });

  test("the client's request object is not changed (each attempt translates afresh)", () => {
    const before = JSON.stringify(REQUEST);
    sent(REQUEST, plan([2, 4], true, true));
    assert.equal(JSON.stringify(REQUEST), before);
  });
});

describe('OpenAI-compatible adapters: the plan as a routing key', () => {
  const request: ChatRequest = { model: 'x', messages: [{ role: 'user', content: 'hi' }] };
  const upstream = (provider: string, r: ChatRequest, p: PromptCachePlan | undefined) => adapterFor(findProvider(provider)!, { anthropicDefaultMaxTokens: 1 }).chatRequest(r, ctx(p));

  test('OpenAI: prompt_cache_key set from the plan; the client\'s own kept; breakpoints ignored', () => {
    const withKey = upstream('openai', request, plan([0], true, false, 'gw-abc'));
    assert.equal(JSON.parse(withKey.body).prompt_cache_key, 'gw-abc');
    assert.ok(!withKey.body.includes('cache_control'));
    const own = upstream('openai', { ...request, prompt_cache_key: 'mine' }, plan([], false, false, 'gw-abc'));
    assert.equal(JSON.parse(own.body).prompt_cache_key, 'mine');
    assert.equal(JSON.parse(upstream('openai', request, undefined).body).prompt_cache_key, undefined);
  });

  test('xAI: the key as the x-grok-conv-id header, no body field', () => {
    const out = upstream('xai', request, plan([], false, false, 'gw-abc'));
    assert.equal(out.headers['x-grok-conv-id'], 'gw-abc');
    assert.equal(JSON.parse(out.body).prompt_cache_key, undefined);
  });

  test('every other OpenAI-format provider gets neither (fields they do not document may be refused)', () => {
    for (const p of PROVIDERS.filter((p) => p.format === 'openai' && p.id !== 'openai' && p.id !== 'xai')) {
      const out = upstream(p.id, request, plan([], false, false, 'gw-abc'));
      assert.equal(JSON.parse(out.body).prompt_cache_key, undefined, p.id);
      assert.equal(out.headers['x-grok-conv-id'], undefined, p.id);
    }
  });
});
