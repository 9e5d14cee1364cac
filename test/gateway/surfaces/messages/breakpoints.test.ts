import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { planPromptCache } from '../../../../src/gateway/prompt-cache/plan.ts';
import type { JsonObject } from '../../../../src/gateway/providers/json.ts';
import type { PromptCachePlan } from '../../../../src/gateway/providers/types.ts';
import { placeablePlan, withBreakpoints } from '../../../../src/gateway/surfaces/messages/breakpoints.ts';
import { stagesForm } from '../../../../src/gateway/surfaces/messages/stages-form.ts';
import { checkCacheControl } from '../../../../tools/fake-provider/prompt-cache-anthropic.ts';

const EPHEMERAL = { type: 'ephemeral' };
const long = (n: number) => `${'the quick brown fox jumps over the lazy dog '.repeat(n)}`;

/** A conversation: a long system prompt, tools, and tool-use turns; `marks` lists where the client put cache_control. */
function body(options: { systemMark?: JsonObject; toolMark?: JsonObject; lastMark?: JsonObject; thinking?: boolean; turns?: number } = {}): JsonObject {
  const messages: JsonObject[] = [{ role: 'user', content: [{ type: 'text', text: 'start' }] }];
  for (let i = 0; i < (options.turns ?? 3); i++) {
    const content: JsonObject[] = options.thinking ? [{ type: 'thinking', thinking: '', signature: `s${i}` }] : [];
    content.push({ type: 'tool_use', id: `t${i}`, name: 'Read', input: { file_path: `/f${i}` } });
    messages.push({ role: 'assistant', content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: long(40) }] });
  }
  if (options.lastMark) {
    const last = messages.at(-1)!['content'] as JsonObject[];
    last[last.length - 1] = { ...last[last.length - 1], cache_control: options.lastMark };
  }
  const system: JsonObject = { type: 'text', text: long(400) };
  if (options.systemMark) system['cache_control'] = options.systemMark;
  const tool: JsonObject = { name: 'Read', description: 'Read a file', input_schema: { type: 'object' } };
  if (options.toolMark) tool['cache_control'] = options.toolMark;
  return { model: 'claude-sonnet-4-5', max_tokens: 100, system: [system], tools: [tool], messages };
}

function plan(b: JsonObject): { form: ReturnType<typeof stagesForm>; plan: PromptCachePlan | undefined } {
  const form = stagesForm(b);
  return { form, plan: planPromptCache({ messages: form.chat.messages, tools: form.chat['tools'], minimum: 1024, key: undefined }) };
}

const marks = (b: JsonObject) => JSON.stringify(b).split('"cache_control"').length - 1;

describe('the gateway\'s breakpoints in a Messages body', () => {
  test('a client with three breakpoints: the plan sees them, one more goes where there is room, none of the client\'s moves', () => {
    const client = body({ systemMark: EPHEMERAL, toolMark: EPHEMERAL, lastMark: EPHEMERAL });
    const frozen = JSON.stringify(client);
    const { form, plan: p } = plan(client);
    assert.ok(p);
    assert.equal(p.breakpoints.system || p.breakpoints.tools, false, 'the planner reads the client\'s marks on system and tools');
    const narrowed = placeablePlan(client, form.chat.messages, form.origin, p)!;
    assert.equal(narrowed.breakpoints.messages.length, 1, 'one left: the end of the stable part');
    const sent = withBreakpoints(client, form.chat.messages, form.origin, narrowed);
    assert.equal(JSON.stringify(client), frozen, 'the client\'s body is not changed in place');
    assert.equal(marks(sent), 4);
    assert.equal(checkCacheControl(sent), undefined, 'Anthropic would take it');
    // The client's breakpoints are where they were; the new one is on the last assistant turn's last block.
    const messages = sent['messages'] as JsonObject[];
    const assistant = messages[messages.length - 2]!['content'] as JsonObject[];
    assert.deepEqual(assistant.at(-1)!['cache_control'], EPHEMERAL);
    assert.equal((sent['system'] as JsonObject[])[0], (client['system'] as JsonObject[])[0], 'the client\'s marked blocks are its own objects');
    assert.equal(messages[0], (client['messages'] as JsonObject[])[0], 'untouched messages are the client\'s objects');
  });

  test('four of the client\'s: none added; a 1-hour breakpoint: none before it', () => {
    const full = body({ systemMark: EPHEMERAL, toolMark: EPHEMERAL, lastMark: EPHEMERAL });
    ((full['messages'] as JsonObject[])[0]!['content'] as JsonObject[])[0]!['cache_control'] = EPHEMERAL;
    const a = plan(full);
    assert.equal(a.plan, undefined, 'the planner sees no room');
    const long1h = body({ lastMark: { type: 'ephemeral', ttl: '1h' } });
    const b = plan(long1h);
    assert.ok(b.plan && (b.plan.breakpoints.system || b.plan.breakpoints.tools || b.plan.breakpoints.messages.length > 0));
    assert.equal(placeablePlan(long1h, b.form.chat.messages, b.form.origin, b.plan), undefined, 'every candidate lies before the 1-hour breakpoint');
  });

  test('no breakpoint in an assistant message holding thinking blocks', () => {
    const client = body({ systemMark: EPHEMERAL, toolMark: EPHEMERAL, lastMark: EPHEMERAL, thinking: true });
    const { form, plan: p } = plan(client);
    assert.ok(p && p.breakpoints.messages.length === 1);
    assert.equal(placeablePlan(client, form.chat.messages, form.origin, p), undefined);
  });

  test('a string system prompt becomes its one text block to carry the mark', () => {
    const client = { ...body({ lastMark: EPHEMERAL }), system: long(400) };
    const { form, plan: p } = plan(client);
    const narrowed = placeablePlan(client, form.chat.messages, form.origin, p!)!;
    assert.ok(narrowed.breakpoints.system);
    const sent = withBreakpoints(client, form.chat.messages, form.origin, narrowed);
    assert.deepEqual(sent['system'], [{ type: 'text', text: long(400), cache_control: EPHEMERAL }]);
    assert.equal(checkCacheControl(sent), undefined);
  });
});
