import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { promptCacheKey } from '../../../src/gateway/prompt-cache/cache-key.ts';
import { anthropicMinimum } from '../../../src/gateway/prompt-cache/minimum.ts';
import { promptCacheWanted } from '../../../src/gateway/prompt-cache/mode.ts';
import { conversationBreakpoints, planPromptCache } from '../../../src/gateway/prompt-cache/plan.ts';
import { prefixReach, SYSTEM, TOOLS } from '../../../src/gateway/prompt-cache/prefix-length.ts';
import { agentLoop, text } from './prompt-cache-fixtures.ts';

/** The plan on its own: where breakpoints go, which ones the minimum or the client's own rule out. */

const LONG = text('sys', 1500);

describe('prompt-cache plan', () => {
  test('an agent loop: the system prompt, the last assistant turn (end of the stable part) and the newest tool result', () => {
    const plan = planPromptCache({ messages: agentLoop(), tools: undefined, minimum: 1024, key: undefined })!;
    assert.deepEqual(plan.breakpoints, { tools: false, system: true, messages: [4, 6] });
  });

  test('conversationBreakpoints: the newest run of user/tool messages, system messages skipped; a prefill is its own side', () => {
    assert.deepEqual(conversationBreakpoints(agentLoop()), { final: 6, stable: 4 });
    const withReminder = [...agentLoop(), { role: 'system', content: 'reminder' }];
    assert.deepEqual(conversationBreakpoints(withReminder), { final: 6, stable: 4 });
    const prefill = [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'Sure:' }];
    assert.deepEqual(conversationBreakpoints(prefill), { final: 1, stable: 0 });
    assert.deepEqual(conversationBreakpoints([{ role: 'user', content: 'only' }]), { final: 0, stable: undefined });
    assert.deepEqual(conversationBreakpoints([{ role: 'system', content: 's' }]), { final: undefined, stable: undefined });
  });

  test('nothing below the minimum: a short prompt gets no breakpoint, a longer one only where its prefix reaches it', () => {
    const short = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }];
    assert.equal(planPromptCache({ messages: short, tools: undefined, minimum: 1024, key: undefined }), undefined);
    // The system prompt alone is under 1024 tokens; with the first user message the prefix passes it.
    const messages = [
      { role: 'system', content: text('s', 700) },
      { role: 'user', content: text('u', 500) },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'next' },
    ];
    const plan = planPromptCache({ messages, tools: undefined, minimum: 1024, key: undefined })!;
    assert.deepEqual(plan.breakpoints, { tools: false, system: false, messages: [2, 3] });
    assert.equal(planPromptCache({ messages, tools: undefined, minimum: 4096, key: undefined }), undefined, "Haiku 4.5's minimum");
  });

  test('long tool definitions get their own breakpoint; four at most', () => {
    const tools = [{ type: 'function', function: { name: 'big', description: LONG, parameters: { type: 'object', properties: {} } } }];
    const plan = planPromptCache({ messages: agentLoop(), tools, minimum: 1024, key: undefined })!;
    assert.deepEqual(plan.breakpoints, { tools: true, system: true, messages: [4, 6] });
  });

  test("the client's own cache_control count against the four: with three placed, only the newest message is marked", () => {
    const cc = { type: 'ephemeral' };
    const messages = agentLoop();
    messages[0] = { role: 'system', content: [{ type: 'text', text: LONG, cache_control: cc }] } as never;
    messages[1] = { role: 'user', content: [{ type: 'text', text: 'a', cache_control: cc }, { type: 'text', text: 'b', cache_control: cc }] } as never;
    const plan = planPromptCache({ messages, tools: undefined, minimum: 1024, key: undefined })!;
    assert.deepEqual(plan.breakpoints, { tools: false, system: false, messages: [6] });
    messages[3] = { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'x', cache_control: cc }] } as never;
    assert.equal(planPromptCache({ messages, tools: undefined, minimum: 1024, key: undefined }), undefined, 'four placed by the client: none added');
  });

  test('a message the client marked already is not counted twice', () => {
    const messages = agentLoop();
    messages[6] = { role: 'tool', tool_call_id: 'c3', content: [{ type: 'text', text: 'file three', cache_control: { type: 'ephemeral' } }] } as never;
    const plan = planPromptCache({ messages, tools: undefined, minimum: 1024, key: undefined })!;
    assert.deepEqual(plan.breakpoints, { tools: false, system: true, messages: [4] });
  });

  test('no Anthropic target: no breakpoints and no counting; the key alone makes a plan', () => {
    assert.equal(planPromptCache({ messages: agentLoop(), tools: undefined, minimum: undefined, key: undefined }), undefined);
    const plan = planPromptCache({ messages: agentLoop(), tools: undefined, minimum: undefined, key: 'gw-k' })!;
    assert.deepEqual(plan, { breakpoints: { tools: false, system: false, messages: [] }, key: 'gw-k' });
  });

  test('prefixReach: tools, then every system message, then the conversation in order', () => {
    assert.equal(prefixReach([{ role: 'user', content: 'x' }], [{ description: LONG }], 1024), TOOLS);
    assert.equal(prefixReach([{ role: 'user', content: 'x' }, { role: 'system', content: LONG }], undefined, 1024), SYSTEM);
    assert.equal(prefixReach([{ role: 'user', content: text('a', 600) }, { role: 'user', content: text('b', 600) }], undefined, 1024), 1);
    assert.equal(prefixReach([{ role: 'user', content: 'x' }], undefined, 1024), undefined);
  });

  test("Anthropic's minimum per model", () => {
    assert.equal(anthropicMinimum('claude-sonnet-4-5'), 1024);
    assert.equal(anthropicMinimum('claude-opus-4-1'), 1024);
    assert.equal(anthropicMinimum('claude-3-5-haiku-latest'), 2048);
    assert.equal(anthropicMinimum('claude-haiku-4-5'), 4096);
    assert.equal(anthropicMinimum('claude-opus-4-5'), 4096);
    assert.equal(anthropicMinimum('claude-sonnet-4-6'), 2048);
    assert.equal(anthropicMinimum('anthropic/claude-sonnet-4.5'), 1024);
  });

  test('the key: stable per tenant and session, different across either, no tenant id or session name in it', () => {
    const a = promptCacheKey('tenant-1', 'conv-1');
    assert.equal(a, promptCacheKey('tenant-1', 'conv-1'));
    assert.notEqual(a, promptCacheKey('tenant-1', 'conv-2'));
    assert.notEqual(a, promptCacheKey('tenant-2', 'conv-1'));
    assert.match(a, /^gw-[A-Za-z0-9_-]{32}$/);
    assert.ok(!a.includes('tenant') && !a.includes('conv'));
  });

  test('on by default with a session; the header decides; the tenant can turn the default off', () => {
    assert.equal(promptCacheWanted({}, undefined, 's'), true);
    assert.equal(promptCacheWanted({}, undefined, undefined), false);
    assert.equal(promptCacheWanted({}, { enabled: false }, 's'), false);
    assert.equal(promptCacheWanted({ 'x-gateway-prompt-cache': 'off' }, undefined, 's'), false);
    assert.equal(promptCacheWanted({ 'x-gateway-prompt-cache': 'On' }, undefined, undefined), true);
    assert.throws(() => promptCacheWanted({ 'x-gateway-prompt-cache': 'maybe' }, undefined, 's'), { status: 400, code: 'invalid_header' });
  });
});
