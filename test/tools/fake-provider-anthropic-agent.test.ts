import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';

/**
 * What the fake's Anthropic side gives an agent client such as Claude Code:
 * a scripted tool-use turn, signed thinking checked on the way back,
 * count_tokens, role-system messages under their beta flag. Checked with
 * the official @anthropic-ai/sdk, and on raw events where the order is the
 * point.
 */

const READ_TOOL = {
  name: 'Read',
  description: 'read a file',
  input_schema: { type: 'object' as const, properties: { file_path: { type: 'string' } }, required: ['file_path'] },
};
const SCRIPT = { tool: 'Read', input: { file_path: '/work/notes.txt' } };
const ASK: Anthropic.MessageParam = { role: 'user', content: 'read notes.txt' };

type Json = Record<string, unknown>;

/** The raw SSE events of a stream: [name, parsed data]. */
function events(raw: string): [string, Json][] {
  return [...raw.matchAll(/^event: (\S+)\ndata: (.*)$/gm)].map((m) => [m[1]!, JSON.parse(m[2]!) as Json]);
}

describe('fake provider, Anthropic agent turns', () => {
  let fake: FakeProvider;
  let client: Anthropic;
  const raw = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${fake.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  before(async () => {
    fake = await createFakeProvider();
    client = new Anthropic({ baseURL: fake.url, apiKey: 'sk-ant-fake', maxRetries: 0, logLevel: 'off' });
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  test('a scripted turn: the named tool is called with the given input (streamed), then the answer quotes the tool result', async () => {
    fake.setBehaviour({ agent: SCRIPT });
    const stream = client.messages.stream({ model: 'claude-fake', max_tokens: 64, tools: [READ_TOOL], messages: [ASK] });
    const fragments: string[] = [];
    stream.on('inputJson', (partial) => fragments.push(partial));
    const first = await stream.finalMessage();
    assert.equal(first.stop_reason, 'tool_use');
    const call = first.content[0];
    assert.ok(call?.type === 'tool_use');
    assert.equal(call.name, 'Read');
    assert.deepEqual(call.input, SCRIPT.input);
    assert.equal(fragments.length, 3); // input_json_delta fragments

    const second = await client.messages.create({
      model: 'claude-fake',
      max_tokens: 64,
      tools: [READ_TOOL],
      messages: [
        ASK,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: '1\tThe code word is PELICAN.' }] }] },
      ],
    });
    assert.equal(second.stop_reason, 'end_turn');
    assert.deepEqual(second.content, [{ type: 'text', text: 'The tool returned: 1\tThe code word is PELICAN.' }]);
  });

  test('a request that does not offer the scripted tool (a side request) gets the plain echo', async () => {
    fake.setBehaviour({ agent: { ...SCRIPT, answer: 'Found:' } });
    const msg = await client.messages.create({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'title please' }] });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'echo: title please' }]);
  });

  test('thinking: a signed block streamed as thinking_delta then signature_delta before the answer, index 0 then 1', async () => {
    fake.setBehaviour({ agent: SCRIPT, thinking: 'Let me read it.' });
    const res = await raw({ model: 'claude-fake', max_tokens: 64, stream: true, thinking: { type: 'adaptive' }, tools: [READ_TOOL], messages: [ASK] });
    const seen = events(await res.text());
    assert.deepEqual(
      seen.map(([name, data]) => `${name}${data['index'] === undefined ? '' : `:${data['index']}`}${isDelta(data) ? `:${(data['delta'] as Json)['type']}` : ''}`),
      [
        'message_start',
        'content_block_start:0',
        'ping',
        'content_block_delta:0:thinking_delta',
        'content_block_delta:0:thinking_delta',
        'content_block_delta:0:thinking_delta',
        'content_block_delta:0:thinking_delta',
        'content_block_delta:0:signature_delta',
        'content_block_stop:0',
        'content_block_start:1',
        'content_block_delta:1:input_json_delta',
        'content_block_delta:1:input_json_delta',
        'content_block_delta:1:input_json_delta',
        'content_block_stop:1',
        'message_delta',
        'message_stop',
      ],
    );
  });

  test('thinking: the signed block sent back unchanged is accepted; a changed text, a changed signature or a dropped block is a 400', async () => {
    fake.setBehaviour({ agent: SCRIPT, thinking: 'Let me read it.' });
    const stream = client.messages.stream({ model: 'claude-fake', max_tokens: 64, thinking: { type: 'adaptive' }, tools: [READ_TOOL], messages: [ASK] });
    const first = await stream.finalMessage();
    const [thinking, call] = first.content;
    assert.ok(thinking?.type === 'thinking' && call?.type === 'tool_use');
    assert.equal(thinking.thinking, 'Let me read it.');
    assert.match(thinking.signature, /^fakesig1\./);

    const next = (assistant: Anthropic.ContentBlockParam[]) =>
      client.messages.create({
        model: 'claude-fake',
        max_tokens: 64,
        thinking: { type: 'adaptive' },
        tools: [READ_TOOL],
        messages: [ASK, { role: 'assistant', content: assistant }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'PELICAN' }] }],
      });
    const ok = await next([thinking, call]);
    assert.equal(ok.content.at(-1)?.type, 'text');

    const refused = async (assistant: Anthropic.ContentBlockParam[], message: RegExp) =>
      assert.rejects(next(assistant), (err) => err instanceof Anthropic.BadRequestError && err.type === 'invalid_request_error' && message.test(err.message));
    await refused([{ ...thinking, thinking: 'Let me read it!' }, call], /messages\.1\.content\.0: Invalid `signature` in `thinking` block/);
    await refused([{ ...thinking, signature: `${thinking.signature.slice(0, -2)}AA` }, call], /Invalid `signature`/);
    await refused([call], /must start with a thinking block/);
  });

  test('thinking: display omitted sends an empty text with its signature; no thinking asked, no block; behaviour unset, nothing checked', async () => {
    fake.setBehaviour({ thinking: 'secret reasoning' });
    const omitted = await client.messages.create({ model: 'claude-fake', max_tokens: 64, thinking: { type: 'adaptive', display: 'omitted' }, messages: [ASK] });
    const block = omitted.content[0];
    assert.ok(block?.type === 'thinking');
    assert.equal(block.thinking, '');
    assert.match(block.signature, /^fakesig1\./);
    const back = await client.messages.create({
      model: 'claude-fake',
      max_tokens: 64,
      thinking: { type: 'adaptive', display: 'omitted' },
      messages: [ASK, { role: 'assistant', content: omitted.content }, { role: 'user', content: 'go on' }],
    });
    assert.equal(back.content.length, 2);

    const plain = await client.messages.create({ model: 'claude-fake', max_tokens: 64, messages: [ASK] });
    assert.deepEqual(plain.content.map((c) => c.type), ['text']);

    fake.reset();
    const unchecked = await client.messages.create({
      model: 'claude-fake',
      max_tokens: 64,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [ASK, { role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 'made-up' }] }, { role: 'user', content: 'go on' }],
    });
    assert.deepEqual(unchecked.content.map((c) => c.type), ['text']);
  });

  test('count_tokens answers {input_tokens}, checked as messages are (no max_tokens needed)', async () => {
    const counted = await client.messages.countTokens({ model: 'claude-fake', system: 'x'.repeat(40), messages: [{ role: 'user', content: 'y'.repeat(40) }] });
    assert.deepEqual(counted, { input_tokens: 20 });
    assert.equal(fake.calls.last()?.route, 'anthropic.count_tokens');
    fake.setBehaviour({ promptTokens: 1234 });
    assert.deepEqual(await client.messages.countTokens({ model: 'claude-fake', messages: [ASK] }), { input_tokens: 1234 });
    const noModel = { messages: [ASK] } as unknown as Anthropic.MessageCountTokensParams;
    await assert.rejects(client.messages.countTokens(noModel), (err) => err instanceof Anthropic.BadRequestError && /model: Field required/.test(err.message));
  });

  test("role-system messages are taken under a per-turn-control beta flag (Claude Code's), refused without; unknown fields are ignored", async () => {
    const body = {
      model: 'claude-fake',
      max_tokens: 64,
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'medium' },
      some_future_field: { a: 1 },
      messages: [ASK, { role: 'system', content: [{ type: 'text', text: 'env' }] }],
    };
    const taken = await raw(body, { 'anthropic-beta': 'claude-code-20250219,per-turn-control-2026-07-01' });
    assert.equal(taken.status, 200);
    assert.deepEqual(((await taken.json()) as { content: unknown }).content, [{ type: 'text', text: 'echo: read notes.txt' }]);
    const refused = await raw(body, { 'anthropic-beta': 'claude-code-20250219' });
    assert.equal(refused.status, 400);
    assert.deepEqual(((await refused.json()) as { error: unknown }).error, { type: 'invalid_request_error', message: "messages.1.role: Input should be 'user' or 'assistant'" });
  });
});

const isDelta = (data: Json) => data['type'] === 'content_block_delta';
