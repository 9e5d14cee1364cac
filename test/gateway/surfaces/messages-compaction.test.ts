import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { costUsd } from '../../../src/gateway/catalog/cost.ts';
import { MODELS } from '../../../src/gateway/catalog/models.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/**
 * Compaction, the gateway's prompt-cache breakpoints and the savings
 * accounting on Messages calls, through the real app with @anthropic-ai/sdk
 * against the fake provider's Anthropic side.
 */

type Json = Record<string, unknown>;
const EPHEMERAL = { type: 'ephemeral' } as const;
const MODEL = 'claude-sonnet-4-5';
const SYSTEM = `You are Claude Code, an agent that edits code.\n${'Follow the repository conventions; run the tests before you answer. '.repeat(120)}`;
const TOOLS = [
  { name: 'Bash', description: 'Run a shell command', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
  { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } },
];
const fileText = (n: number) => `// src/module${n}.ts\n${'export const value = compute(input, options); // keep\n'.repeat(150)}// end ${n}`;

/** Tool turn k of a session: a tool_use `toolu_<k>` reading a file, and its result. */
const toolTurn = (k: number): Json[] => [
  { role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${k}`, name: 'Read', input: { file_path: `src/module${k}.ts` } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${k}`, content: [{ type: 'text', text: fileText(k) }] }] },
];

/** A Claude-Code-shaped history: a first user turn, then `n` tool turns. */
function history(n: number): Json[] {
  const messages: Json[] = [{ role: 'user', content: [{ type: 'text', text: 'Fix the failing tests in src/.' }] }];
  for (let k = 0; k < n; k++) messages.push(...toolTurn(k));
  return messages;
}

/**
 * What Claude Code sends for a turn: its breakpoints on the system prompt's
 * last block, the last tool and the newest message's last block (three),
 * the latter moving forward each turn; every earlier message as it was.
 */
function claudeCodeBody(messages: readonly Json[]): Json {
  const marked = messages.map((m, i) => {
    if (i !== messages.length - 1) return m;
    const content = (m['content'] as Json[]).slice();
    content[content.length - 1] = { ...content[content.length - 1], cache_control: EPHEMERAL };
    return { ...m, content };
  });
  return {
    model: MODEL,
    max_tokens: 4096,
    system: [
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332' },
      { type: 'text', text: SYSTEM, cache_control: EPHEMERAL },
    ],
    tools: TOOLS.map((t, i) => (i === TOOLS.length - 1 ? { ...t, cache_control: EPHEMERAL } : t)),
    messages: marked,
    thinking: { type: 'adaptive' },
  };
}

const marks = (value: unknown) => JSON.stringify(value).split('"cache_control"').length - 1;

describe('compaction and prompt caching on the Messages surface', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  let claude: Anthropic;
  before(async () => {
    gw = await startLiveGateway('sqlite');
    t = await gw.tenant({ providers: ['anthropic'] });
    claude = new Anthropic({ baseURL: gw.url, apiKey: t.apiKey, maxRetries: 0 });
    const patched = await gw.api('/api/v1/tenant', {
      method: 'PATCH',
      token: t.session,
      body: { settings: { compaction: { stale_trigger_tokens: 6000, stale_keep_results: 2, stale_batch_tokens: 2000 } } },
    });
    assert.equal(patched.status, 200);
  });
  after(() => gw.close());

  const upstream = () => gw.fake.calls.last()!.body as Json;

  test('agent mode: old tool results cleared upstream, the latest signed thinking turn passes the provider\'s check, X-Gateway-Compaction names it, a breakpoint only where there was room', async () => {
    gw.fake.setBehaviour({ agent: { tool: 'Read', input: { file_path: 'src/config.ts' } }, thinking: 'I should read the config.' });
    try {
      const headers = { 'x-gateway-compact': 'agent', 'x-claude-code-session-id': 'cc-session-1' };
      // Turn 1: eight tool turns, an answer, and a new question: the fake answers with signed thinking and a tool_use.
      const past: Json[] = [...history(8), { role: 'assistant', content: [{ type: 'text', text: 'The tests pass now.' }] }];
      past.push({ role: 'user', content: [{ type: 'text', text: 'Now read the config.' }] });
      const first = await claude.messages
        .create(claudeCodeBody(past) as unknown as Anthropic.MessageCreateParamsNonStreaming, { headers })
        .withResponse();
      assert.equal(first.data.stop_reason, 'tool_use');
      assert.match(first.response.headers.get('x-gateway-compaction') ?? '', /stale-results/);
      const sent1 = upstream();
      const messages1 = sent1['messages'] as Json[];
      assert.match(String(((messages1[2]!['content'] as Json[])[0]!['content'] as Json[])[0]!['text']), /^\[gateway: the result of Read call toolu_0 was cleared/);
      assert.equal(messages1.length, past.length, 'nothing dropped');
      assert.equal(marks(sent1), 4, 'the client\'s three breakpoints and one of the gateway\'s');
      assert.deepEqual((messages1.at(-2)!['content'] as Json[])[0]!['cache_control'], EPHEMERAL, 'the gateway\'s on the last assistant turn (the stable prefix)');
      assert.deepEqual((messages1.at(-1)!['content'] as Json[])[0]!['cache_control'], EPHEMERAL, 'the client\'s breakpoint where it put it');
      assert.deepEqual(sent1['system'], claudeCodeBody(past)['system']);
      assert.deepEqual(sent1['tools'], claudeCodeBody(past)['tools']);

      // Turn 2: the signed turn sent back with the tool's result; it is the latest exchange and must arrive untouched.
      const assistant = { role: 'assistant', content: first.data.content };
      assert.equal(first.data.content[0]!.type, 'thinking');
      const turn2 = [...past, assistant, { role: 'user', content: [{ type: 'tool_result', tool_use_id: (first.data.content[1] as { id: string }).id, content: fileText(99) }] }];
      const second = await claude.messages
        .create(claudeCodeBody(turn2) as unknown as Anthropic.MessageCreateParamsNonStreaming, { headers })
        .withResponse();
      assert.equal(second.data.type, 'message', 'the fake\'s signed-thinking check passed on the compacted request');
      const sent2 = upstream()['messages'] as Json[];
      assert.equal(JSON.stringify(sent2.at(-2)), JSON.stringify(assistant), 'the latest assistant turn, thinking and signature included, byte for byte');
      assert.match(second.response.headers.get('x-gateway-compaction') ?? '', /stale-results/);
      assert.equal(marks(upstream()), 3, 'no room taken in a turn holding thinking: the client\'s three only');
      const row = await usageRecord(gw, second.response.headers.get('x-gateway-request-id')!);
      assert.equal(row.compaction, second.response.headers.get('x-gateway-compaction'));
      assert.ok(row.compaction_saved_tokens > 0);
    } finally {
      gw.fake.reset();
    }
  });

  test('a body compaction leaves alone goes as the client sent it, key for key', async () => {
    const body = claudeCodeBody(history(2));
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': t.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', 'x-gateway-compact': 'agent' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get('x-gateway-compaction'), 'none');
    assert.equal(JSON.stringify(upstream()), JSON.stringify(body));
  });

  /**
   * One Claude-Code-shaped session, turn by turn: through the gateway in
   * `mode`, and the same requests straight to the fake (its own key, so its
   * own cache). The fake simulates Anthropic's prompt cache and bills; the
   * measured saving is the direct bill minus the gateway's.
   */
  async function replay(mode: string, sessionId: string): Promise<{ direct: number; gateway: number; claimed: number; compaction: number; promptCache: number }> {
    const entry = MODELS.find((m) => m.provider === 'anthropic' && m.id === MODEL)!;
    const bill = () => {
      let usd = 0;
      for (const tokens of gw.fake.ledger.byModel().values()) usd += costUsd(tokens, entry)!;
      return usd;
    };
    const turns: Json[][] = [];
    const messages = history(0);
    for (let k = 0; k < 40; k++) {
      messages.push(...toolTurn(k));
      turns.push([...messages]);
    }
    gw.fake.reset();
    gw.fake.setBehaviour({ promptCache: true, completionTokens: 50 });
    try {
      for (const messagesOfTurn of turns) {
        const res = await fetch(`${gw.fake.url}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': `sk-direct-${sessionId}`, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
          body: JSON.stringify(claudeCodeBody(messagesOfTurn)),
        });
        assert.equal(res.status, 200, await res.clone().text());
      }
      const direct = bill();
      gw.fake.ledger.clear();
      let claimed = 0;
      let compaction = 0;
      let promptCache = 0;
      for (const messagesOfTurn of turns) {
        const { response } = await claude.messages
          .create(claudeCodeBody(messagesOfTurn) as unknown as Anthropic.MessageCreateParamsNonStreaming, {
            headers: { 'x-gateway-compact': mode, 'x-claude-code-session-id': sessionId },
          })
          .withResponse();
        const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
        claimed += row.cost_saved_usd;
        compaction += row.saved_compaction_usd;
        promptCache += row.saved_prompt_cache_usd;
      }
      return { direct, gateway: bill(), claimed, compaction, promptCache };
    } finally {
      gw.fake.reset();
    }
  }

  test('savings: what the records claim for a Claude-Code-shaped session in agent mode is within 5 % of what the fake\'s bills show', async () => {
    const r = await replay('agent', 'cc-savings-agent');
    const measured = r.direct - r.gateway;
    assert.ok(measured > 0.05 * r.direct, `agent mode saves on this session (direct $${r.direct.toFixed(4)}, through the gateway $${r.gateway.toFixed(4)})`);
    assert.ok(r.compaction > 0, 'compaction claimed its share');
    assert.ok(Math.abs(r.claimed - measured) <= 0.05 * measured, `claimed $${r.claimed.toFixed(5)}, measured $${measured.toFixed(5)} (compaction $${r.compaction.toFixed(5)}, breakpoints $${r.promptCache.toFixed(5)})`);
  });

  test('savings: with compaction off, nothing is claimed that the bills do not show', async () => {
    const r = await replay('off', 'cc-savings-off');
    const measured = r.direct - r.gateway;
    assert.equal(r.compaction, 0);
    // The client's three breakpoints already read the whole history each turn: the gateway's fourth saves next to nothing.
    assert.ok(Math.abs(measured) <= 0.01 * r.direct, `measured $${measured.toFixed(5)} of $${r.direct.toFixed(4)}`);
    assert.ok(Math.abs(r.claimed - measured) <= 0.01 * r.direct, `claimed $${r.claimed.toFixed(5)}, measured $${measured.toFixed(5)}`);
  });
});
