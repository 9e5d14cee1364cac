import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import { countPromptTokens } from '../../../src/gateway/tokens.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

type Messages = OpenAI.ChatCompletionMessageParam[];
const mini = catalogEntry('openai', 'gpt-4o-mini')!;
const FILE = Array.from({ length: 60 }, (_, i) => `export function helper${i}(x: number) {   \r\n  return x * ${i};\r\n}`).join('\r\n\r\n\r\n');
const LOG = Array.from({ length: 900 }, (_, i) => `ok ${i} - test case number ${i} passes`).join('\n');
/** The latest exchange's log: as long, never cut. */
const LOG2 = Array.from({ length: 900 }, (_, i) => `ok ${i} - second run, case ${i} passes`).join('\n');
const TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'read_file', description: 'Read a file.', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
];
const call = (id: string, args: string): OpenAI.ChatCompletionMessageParam => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: args } }],
});

/** An agent read the same file twice, ran the tests, and the user asks again. */
const SESSION: Messages = [
  { role: 'system', content: 'You are a coding agent.   \n\n\n\nBe brief.' },
  { role: 'user', content: 'Tidy   src/helpers.ts  ' },
  call('call_1', '{"path":"src/helpers.ts"}'),
  { role: 'tool', tool_call_id: 'call_1', content: FILE },
  call('call_2', '{"path": "src/helpers.ts"}'),
  { role: 'tool', tool_call_id: 'call_2', content: FILE },
  call('call_3', '{"path":"test.log"}'),
  { role: 'tool', tool_call_id: 'call_3', content: LOG },
  call('call_4', '{"path":"test-2.log"}'),
  { role: 'tool', tool_call_id: 'call_4', content: LOG2 },
  { role: 'user', content: 'Now   what?  ' },
];

for (const kind of DB_KINDS) {
  describe(`compaction through the OpenAI SDK (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      gw = await startLiveGateway(kind);
      t = await gw.tenant();
    });
    after(() => gw.close());

    const send = (compact: string | undefined, messages: Messages = SESSION, model = 'openai/gpt-4o-mini') =>
      t.openai.chat.completions
        .create({ model, messages, tools: TOOLS }, compact === undefined ? {} : { headers: { 'X-Gateway-Compact': compact } })
        .withResponse();
    const received = () => (gw.fake.calls.last()!.body as { messages: Messages; tools: unknown }).messages;

    test('by default nothing is compacted: the provider gets the messages exactly as sent', async () => {
      const { response } = await send(undefined);
      assert.deepEqual(received(), SESSION);
      assert.equal(response.headers.get('x-gateway-compaction'), 'none');
      assert.equal(response.headers.get('x-gateway-tokens-saved'), '0');
    });

    test('safe: whitespace and the repeated read go; the provider gets the rest untouched; headers and usage record tell', async () => {
      const { response } = await send('safe');
      const sent = received();
      assert.equal(sent.length, SESSION.length);
      assert.deepEqual(sent[0], SESSION[0], 'the system prompt is never changed');
      assert.deepEqual(sent[1], SESSION[1], 'user messages are never changed');
      assert.deepEqual(sent.at(-1), SESSION.at(-1));
      assert.equal(sent[3]!.content, FILE.replace(/ +\r\n/g, '\n').replace(/\r\n/g, '\n').replace(/\n\n\n+/g, '\n\n'));
      assert.equal(sent[5]!.content, '[gateway: identical to the result of tool call call_1 (read_file) above; this repeated copy was removed]');
      assert.equal(sent[7]!.content, LOG, 'safe never cuts a tool output');
      assert.equal(sent[9]!.content, LOG2);
      assert.deepEqual((gw.fake.calls.last()!.body as { tools: unknown }).tools, TOOLS, 'tool definitions untouched');
      const h = response.headers;
      assert.equal(h.get('x-gateway-compaction'), 'whitespace,repeats');
      const saved = countPromptTokens(SESSION, TOOLS) - countPromptTokens(sent, TOOLS);
      assert.ok(saved > 500, `${saved} tokens saved`);
      assert.equal(h.get('x-gateway-tokens-saved'), String(saved));
      const row = await usageRecord(gw, h.get('x-gateway-request-id')!);
      assert.equal(row.compaction, 'whitespace,repeats');
      assert.equal(row.compaction_saved_tokens, saved);
      assert.equal(row.saved_tokens, saved);
      // A first turn: nothing was cached, so every removed token is priced at the input price, in the provider's
      // tokens (the fake counts a quarter of the request's characters: the gateway's counts are scaled to its figure).
      const scale = row.prompt_tokens / countPromptTokens(sent, TOOLS);
      assert.ok(Math.abs(row.saved_compaction_usd - (saved * scale * mini.input) / 1e6) < 1e-9, `${row.saved_compaction_usd}`);
      assert.ok(Math.abs(row.cost_saved_usd - row.saved_compaction_usd) < 1e-12);
      assert.ok(Math.abs(Number(h.get('x-gateway-cost-saved')) - row.saved_compaction_usd) < 1e-9);
    });

    test("the tenant's default applies without a header, and the header overrides it", async () => {
      const patched = await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { compaction: { default: 'aggressive' } } } });
      assert.equal(patched.status, 200);
      const { response } = await send(undefined);
      assert.equal(response.headers.get('x-gateway-compaction'), 'whitespace,repeats,tool-output');
      const log = String(received()[7]!.content);
      assert.match(log, /\[gateway: [\d,]+ lines \([\d,]+ characters\) removed from the middle of this output\]/);
      assert.ok(log.startsWith('ok 0 - ') && log.endsWith('ok 899 - test case number 899 passes'));
      assert.equal(received()[9]!.content, LOG2, 'the latest exchange (what the model answers now) arrives whole');
      assert.deepEqual(received().slice(8), SESSION.slice(8));
      const off = await send('off');
      assert.equal(off.response.headers.get('x-gateway-compaction'), 'none');
      assert.deepEqual(received(), SESSION);
      await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { compaction: null } } });
    });

    test('a budget: the oldest middle turns go, pairs whole, and the prompt fits (Anthropic too)', async () => {
      const long: Messages = [SESSION[0]!, SESSION[1]!];
      for (let n = 1; n <= 30; n++) {
        long.push(call(`c${n}`, `{"path":"src/file${n}.ts"}`));
        long.push({ role: 'tool', tool_call_id: `c${n}`, content: `// file ${n}\n${'const x = 1;\n'.repeat(40)}${n}` });
      }
      long.push({ role: 'user', content: 'Summarize.' });
      for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5']) {
        const { data, response } = await send('3000', long, model);
        assert.match(String(data.choices[0]?.message.content), /^echo: /, `${model} answered`);
        assert.equal(response.headers.get('x-gateway-compaction'), 'drop-turns');
        if (model.startsWith('openai/')) {
          const sent = received();
          assert.ok(countPromptTokens(sent, TOOLS) <= 3000, `${countPromptTokens(sent, TOOLS)} tokens`);
          assert.deepEqual(sent.slice(0, 2), long.slice(0, 2));
          assert.deepEqual(sent.at(-1), long.at(-1));
          const ids = sent.flatMap((m) => ('tool_calls' in m && m.tool_calls ? m.tool_calls.map((c) => c.id) : []));
          const results = sent.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : []));
          assert.deepEqual(ids, results, 'every call kept has its result, in order');
          assert.ok(sent.length < long.length);
        }
      }
    });

    test('a budget that cannot be met: 400 compaction_budget_unreachable, nothing sent upstream', async () => {
      const before = gw.fake.calls.count;
      // The last exchange (the second test log, whole) alone is over 200 tokens.
      await assert.rejects(send('200', SESSION.slice(0, -1)), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 400);
        assert.equal(err.code, 'compaction_budget_unreachable');
        assert.match(err.message, /budget of 200 tokens/);
        return true;
      });
      assert.equal(gw.fake.calls.count, before);
    });

    test('agent: past the trigger, the oldest tool results are cleared in a batch, the recent ones and the latest exchange kept; the tenant sets the knobs', async () => {
      const long: Messages = [SESSION[0]!, SESSION[1]!];
      for (let n = 1; n <= 12; n++) {
        long.push(call(`c${n}`, `{"path":"src/file${n}.ts"}`));
        long.push({ role: 'tool', tool_call_id: `c${n}`, content: `// file ${n}\n${'const value = compute(input, options);\n'.repeat(120)}${n}` });
      }
      const patched = await gw.api('/api/v1/tenant', {
        method: 'PATCH',
        token: t.session,
        body: { settings: { compaction: { default: 'agent', stale_trigger_tokens: 6000, stale_keep_results: 2, stale_batch_tokens: 2000 } } },
      });
      assert.equal(patched.status, 200);
      const { response } = await send(undefined, long);
      assert.equal(response.headers.get('x-gateway-compaction'), 'stale-results');
      const sent = received();
      assert.ok(countPromptTokens(sent, TOOLS) <= 6000, `${countPromptTokens(sent, TOOLS)} tokens`);
      assert.equal(sent[3]!.content, '[gateway: the result of read_file call c1 was cleared to save context; call the tool again if it is needed]');
      assert.deepEqual(sent.slice(-6), long.slice(-6), 'the two most recent results and the latest exchange are whole');
      assert.equal(sent.length, long.length, 'nothing dropped');
      await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { compaction: null } } });
    });

    test('an invalid X-Gateway-Compact: 400 in the OpenAI shape naming the header', async () => {
      const before = gw.fake.calls.count;
      for (const bad of ['maximal', '50', 'safe, off']) {
        await assert.rejects(send(bad), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
          assert.equal(err.status, 400);
          assert.equal(err.code, 'invalid_header');
          assert.equal(err.type, 'invalid_request_error');
          assert.match(err.message, /X-Gateway-Compact: must be off, safe, agent, aggressive, or a token budget/);
          return true;
        });
      }
      assert.equal(gw.fake.calls.count, before);
    });

    test('a stream carries X-Gateway-Compaction in its head', async () => {
      const { data: stream, response } = await t.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: SESSION, tools: TOOLS, stream: true }, { headers: { 'X-Gateway-Compact': 'safe' } })
        .withResponse();
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'echo: Now   what?  ');
      assert.equal(response.headers.get('x-gateway-compaction'), 'whitespace,repeats');
      assert.ok(Number(response.headers.get('x-gateway-tokens-saved')) > 500);
    });
  });
}
