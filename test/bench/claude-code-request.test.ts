import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chatRequest, ID_PLACEHOLDER, messagesRequest } from '../../bench/lib/claude-code-request.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../helpers/gateway-service.ts';

/**
 * The Messages benchmark's turn (bench/lib/claude-code-request.ts) in its two
 * shapes, through the real gateway to the fake provider's Anthropic side: the
 * comparison of the two surfaces is only fair if the fake receives the same
 * conversation from both.
 */
describe('the Messages benchmark request', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite');
    t = await gw.tenant({ providers: ['anthropic'] });
  });
  after(() => gw.close());

  const send = async (path: string, body: Record<string, unknown>, headers: Record<string, string>) => {
    const res = await fetch(`${gw.url}/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${t.apiKey}`, 'x-gateway-compact': 'off', ...headers },
      body: JSON.stringify(body).replace(ID_PLACEHOLDER, 'test-1'),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.arrayBuffer();
    return gw.fake.calls.last()!.body as Record<string, unknown>;
  };

  /**
   * Claude Code's tool results carry their text as a string and the breakpoint on the tool_result block; the
   * translation from Chat Completions gives text blocks with the breakpoint on the last one. The same prompt to
   * Anthropic: one shape, so that the rest must be equal.
   */
  const sameShape = (messages: unknown) =>
    (messages as { role: string; content: Record<string, unknown>[] }[]).map((m) => ({
      ...m,
      content: m.content.map((block) => {
        if (block['type'] !== 'tool_result' || typeof block['content'] !== 'string') return block;
        const { cache_control, content, ...rest } = block;
        return { ...rest, content: [{ type: 'text', text: content, ...(cache_control ? { cache_control } : {}) }] };
      }),
    }));

  test('as Messages and as Chat Completions, the fake receives the same system, tools and turns, with three breakpoints', async () => {
    const viaMessages = await send('/messages', messagesRequest({ model: 'claude-sonnet-4-5', stream: false }), { 'anthropic-version': '2023-06-01' });
    const viaChat = await send('/chat/completions', chatRequest({ model: 'anthropic/claude-sonnet-4-5', stream: false }), {});
    assert.ok(JSON.stringify(viaMessages).includes('test-1'), 'the id placeholder sits in the body');
    for (const field of ['system', 'tools', 'max_tokens', 'temperature', 'metadata'] as const) {
      assert.deepEqual(viaChat[field], viaMessages[field], `${field}: the same upstream from both surfaces`);
    }
    assert.deepEqual(sameShape(viaChat['messages']), sameShape(viaMessages['messages']), 'the same turns');
    const breakpoints = JSON.stringify(viaMessages).split('"cache_control"').length - 1;
    assert.equal(breakpoints, 3);
  });
});
