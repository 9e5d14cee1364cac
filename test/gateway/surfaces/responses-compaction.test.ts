import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/**
 * Compaction on Responses calls, through the real app against the fake
 * provider: what the stages change is written back into the items (OpenAI
 * is sent the compacted Responses request, another provider its
 * translation), reasoning items and their turns kept whole.
 */

type Json = Record<string, unknown>;
const fileText = (n: number) => `// src/module${n}.ts\n${'export const value = compute(input, options); // keep\n'.repeat(150)}// end ${n}`;

/** A Codex-shaped conversation: developer instructions, a question, then `n` turns of reasoning, a read and its output. */
function items(n: number): Json[] {
  const out: Json[] = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix the failing tests in src/.' }] },
  ];
  for (let k = 0; k < n; k++) {
    out.push({ type: 'reasoning', id: `rs_${k}`, summary: [], encrypted_content: `sealed-${k}` });
    out.push({ type: 'function_call', id: `fc_${k}`, call_id: `call_${k}`, name: 'read_file', arguments: JSON.stringify({ path: `src/module${k}.ts` }) });
    out.push({ type: 'function_call_output', call_id: `call_${k}`, output: fileText(k) });
  }
  out.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'The tests pass now.' }] });
  out.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Now read the config.' }] });
  return out;
}

const TOOLS = [{ type: 'function', name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }];

describe('compaction on the Responses surface', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite');
    t = await gw.tenant();
    const patched = await gw.api('/api/v1/tenant', {
      method: 'PATCH',
      token: t.session,
      body: { settings: { compaction: { stale_trigger_tokens: 6000, stale_keep_results: 2, stale_batch_tokens: 2000 }, models: { aliases: { 'claude-via-responses': 'anthropic/claude-haiku-4-5' } } } },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
  });
  after(() => gw.close());

  const post = async (body: Json, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return res;
  };
  const upstream = () => gw.fake.calls.last()!.body as Json;

  test('to OpenAI: old tool outputs cleared in the items, every other item as sent and in order, the saving recorded', async () => {
    const sentItems = items(8);
    const res = await post({ model: 'gpt-4o-mini', input: sentItems, tools: TOOLS, store: false }, { 'x-gateway-compact': 'agent' });
    assert.match(res.headers.get('x-gateway-compaction') ?? '', /stale-results/);
    const input = upstream()['input'] as Json[];
    assert.equal(input.length, sentItems.length, 'nothing dropped');
    for (let i = 0; i < input.length; i++) {
      if (sentItems[i]!['type'] === 'function_call_output') continue;
      assert.deepEqual(input[i], sentItems[i], `item ${i} as the client sent it`);
    }
    const outputs = input.filter((item) => item['type'] === 'function_call_output').map((item) => String(item['output']));
    assert.match(outputs[0]!, /^\[gateway: the result of read_file call call_0 was cleared/);
    assert.equal(outputs.at(-1), fileText(7), 'the latest results kept');
    const row = await usageRecord(gw, res.headers.get('x-gateway-request-id')!);
    assert.equal(row.compaction, res.headers.get('x-gateway-compaction'));
    assert.ok(row.compaction_saved_tokens > 0);
  });

  test('to Anthropic: the compacted items translated, the tool results cleared there too', async () => {
    const res = await post({ model: 'claude-via-responses', input: items(8), tools: TOOLS, store: false }, { 'x-gateway-compact': 'agent' });
    assert.equal(res.headers.get('x-gateway-provider'), 'anthropic');
    assert.match(res.headers.get('x-gateway-compaction') ?? '', /stale-results/);
    assert.equal(res.headers.get('x-gateway-reasoning-dropped'), '8');
    const messages = upstream()['messages'] as { role: string; content: unknown }[];
    const results = messages.flatMap((m) => (Array.isArray(m.content) ? (m.content as Json[]) : [])).filter((b) => b['type'] === 'tool_result');
    assert.equal(results.length, 8);
    assert.match(JSON.stringify(results[0]), /the result of read_file call call_0 was cleared/);
  });

  test('a request compaction leaves alone goes to OpenAI key for key', async () => {
    const body = { model: 'gpt-4o-mini', input: items(1), tools: TOOLS, store: false, client_metadata: { a: 1 } };
    const res = await post(body, { 'x-gateway-compact': 'agent' });
    assert.equal(res.headers.get('x-gateway-compaction'), 'none');
    assert.equal(JSON.stringify(upstream()), JSON.stringify(body));
  });
});
