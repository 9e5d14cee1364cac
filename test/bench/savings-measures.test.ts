import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientRequest, type Message } from '../../bench/lib/savings-clients.ts';
import { lastBlockMarked, latestExchange, RewriteMeter } from '../../bench/lib/upstream-prompts.ts';
import { anthropicAdapter } from '../../src/gateway/providers/anthropic/index.ts';
import type { ChatRequest } from '../../src/gateway/providers/types.ts';
import { countPromptTokens } from '../../src/gateway/tokens.ts';

/**
 * The savings benchmark's measures on upstream bodies (bench/lib/upstream-prompts.ts)
 * and its cache-aware client (bench/lib/savings-clients.ts), with the
 * Anthropic adapter's translation the direct way uses.
 */

const long = (seed: string, words: number) => Array.from({ length: words }, (_, i) => `${seed}${i}`).join(' ');
const TOOLS = [
  { type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
  { type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } } },
];
const call = (id: string, path: string) => ({ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path }) } });
const history: Message[] = [
  { role: 'system', content: long('sys', 300) },
  { role: 'user', content: 'fix the bug' },
  { role: 'assistant', content: null, tool_calls: [call('c1', 'a.ts')] },
  { role: 'tool', tool_call_id: 'c1', content: long('fileA', 400) },
  { role: 'assistant', content: null, tool_calls: [call('c2', 'b.ts')] },
  { role: 'tool', tool_call_id: 'c2', content: long('fileB', 400) },
];
const anthropic = anthropicAdapter('Anthropic', { anthropicDefaultMaxTokens: 4096 });
const toAnthropic = (request: object) =>
  JSON.parse(anthropic.chatRequest(request as ChatRequest, { model: 'claude-sonnet-4-5', apiKey: 'k', baseUrl: new URL('http://127.0.0.1/v1'), requestId: 'r', created: 0 }).body) as Record<string, unknown>;

describe('savings benchmark measures', () => {
  test('rewrites: none for a prompt that only grows; an edit in the middle counts the previous prompt from the edit on; a new session starts over', () => {
    const meter = new RewriteMeter('openai');
    const body = (messages: Message[]) => ({ model: 'gpt-5', messages });
    assert.equal(meter.add(body(history.slice(0, 4))), 0, 'nothing to compare the first prompt with');
    assert.equal(meter.add(body(history)), 0, 'appended only');
    const edited = history.map((m, i) => (i === 3 ? { ...m, content: '[removed]' } : m));
    const fromEdit = countPromptTokens(history) - countPromptTokens(history.slice(0, 3)) - 3; // the reply framing is not part of the prefix
    const rewritten = meter.add(body(edited));
    assert.ok(Math.abs(rewritten - fromEdit) <= 4, `${rewritten} rewritten, ${fromEdit} from the edit on`);
    assert.equal(meter.total, rewritten);
    meter.startSession();
    assert.equal(meter.add(body(history.slice(0, 2))), 0);

    const blocks = new RewriteMeter('anthropic');
    blocks.add(toAnthropic({ model: 'x', messages: history.slice(0, 4) }));
    assert.equal(blocks.add(toAnthropic({ model: 'x', messages: history })), 0, 'appended only');
    assert.ok(blocks.add(toAnthropic({ model: 'x', messages: edited })) > 800, 'the edited tool result and everything after it');
  });

  test('the latest exchange: equal whitespace and cache_control aside; a cut or replaced latest result differs', () => {
    const client = { model: 'gpt-5', messages: history };
    const reference = latestExchange('openai', client);
    assert.notEqual(reference, '');
    const tidied = history.map((m, i) => (i === 5 ? { ...m, content: [{ type: 'text', text: `${m.content}\n\n\n`, cache_control: { type: 'ephemeral' } }] } : m));
    assert.equal(latestExchange('openai', { messages: tidied }), reference);
    const cut = history.map((m, i) => (i === 5 ? { ...m, content: 'fileB0 [gateway: removed from the middle]' } : m));
    assert.notEqual(latestExchange('openai', { messages: cut }), reference);
    const olderCut = history.map((m, i) => (i === 3 ? { ...m, content: 'a reference' } : m));
    assert.equal(latestExchange('openai', { messages: olderCut }), reference, 'an older result is not the latest exchange');
    assert.equal(latestExchange('openai', { messages: history.slice(0, 2) }), '', 'no assistant message yet');

    const upstream = latestExchange('anthropic', toAnthropic(client));
    assert.equal(latestExchange('anthropic', toAnthropic({ model: 'x', messages: tidied })), upstream);
    assert.notEqual(latestExchange('anthropic', toAnthropic({ model: 'x', messages: cut })), upstream);
  });

  test('the cache-aware client: breakpoints on the last tool, the system prompt and the last message, carried to Anthropic by the adapter', () => {
    const request = clientRequest('cache-aware', 'anthropic/claude-sonnet-4-5', 's1', history, TOOLS);
    const body = toAnthropic(request);
    const tools = body['tools'] as Record<string, unknown>[];
    assert.deepEqual(tools.at(-1)!['cache_control'], { type: 'ephemeral' });
    assert.equal(tools[0]!['cache_control'], undefined);
    assert.deepEqual((body['system'] as Record<string, unknown>[]).at(-1)!['cache_control'], { type: 'ephemeral' });
    assert.ok(lastBlockMarked('anthropic', body), 'the last tool result carries the breakpoint');
    assert.equal(JSON.stringify(body).split('cache_control').length - 1, 3, 'three breakpoints, no more');
    assert.ok(!lastBlockMarked('anthropic', toAnthropic(clientRequest('naive', 'anthropic/claude-sonnet-4-5', 's1', history, TOOLS))));
    // A tool result keeps its shape from one turn to the next: the one marked now is the same block, unmarked, later.
    const next = toAnthropic(clientRequest('cache-aware', 'anthropic/claude-sonnet-4-5', 's1', [...history, { role: 'user', content: 'go on' }], TOOLS));
    const resultOf = (b: Record<string, unknown>) => JSON.stringify((b['messages'] as { content: unknown[] }[])[4]!.content[0], (k, v) => (k === 'cache_control' ? undefined : v));
    assert.equal(resultOf(next), resultOf(body));
    assert.deepEqual(clientRequest('cache-aware', 'openai/gpt-5', 's1', history, TOOLS).prompt_cache_key, 'bench-session-s1');
    assert.equal(JSON.stringify(clientRequest('cache-aware', 'openai/gpt-5', 's1', history, TOOLS)).includes('cache_control'), false);
  });
});
