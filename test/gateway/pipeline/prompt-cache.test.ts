import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { agentLoop, cacheControlPaths, text, usageRecord } from './prompt-cache-fixtures.ts';

/**
 * Provider prompt caching through the real app and the OpenAI SDK: the
 * exact request the fake provider received (where the breakpoints sit, the
 * prompt_cache_key), when the gateway places none, and what it claims to
 * have saved against what the fake's prompt-cache simulation billed.
 */

type Messages = OpenAI.ChatCompletionMessageParam[];
const LONG = text('sys', 1500);
const TOOLS: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'read', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }];
const SONNET = 'anthropic/claude-sonnet-4-5';
const session = (id: string) => ({ headers: { 'X-Gateway-Session-Id': id } });

for (const kind of DB_KINDS) {
  describe(`prompt caching through the gateway (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    // biome-ignore lint/suspicious/noExplicitAny: the body the fake received, inspected field by field
    const sent = (): any => gw.fake.calls.last()!.body;
    before(async () => {
      gw = await startLiveGateway(kind);
      t = await gw.tenant();
    });
    beforeEach(() => gw.fake.reset());
    after(() => gw.close());

    test('Anthropic, an agent loop with a session: the system prompt, the end of the stable part and the newest turn', async () => {
      await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop(), tools: TOOLS }, session('loop-1'));
      const body = sent();
      // Anthropic turns: user(task), assistant(c1), user(result c1), assistant(c2, c3), user(results c2, c3).
      assert.deepEqual(cacheControlPaths(body), ['system.0', 'messages.3.1', 'messages.4.1']);
      assert.deepEqual(body.messages[4].content[1], { type: 'tool_result', tool_use_id: 'c3', content: 'file three', cache_control: { type: 'ephemeral' } });
    });

    test('streamed: the same breakpoints', async () => {
      const stream = await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop(), tools: TOOLS, stream: true }, session('loop-2'));
      for await (const _ of stream);
      assert.deepEqual(cacheControlPaths(sent()), ['system.0', 'messages.3.1', 'messages.4.1']);
    });

    test('long tool definitions: a breakpoint after them too, four in all', async () => {
      const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'read', description: text('tool', 1200), parameters: { type: 'object', properties: {} } } }];
      await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop(), tools }, session('loop-3'));
      assert.deepEqual(cacheControlPaths(sent()), ['tools.0', 'system.0', 'messages.3.1', 'messages.4.1']);
    });

    test('none below the minimum: a short prompt; 2500 tokens on Haiku 4.5 (4096) but not on Sonnet 4.5 (1024)', async () => {
      await t.openai.chat.completions.create({ model: SONNET, messages: [{ role: 'user', content: 'short question' }] }, session('short'));
      assert.deepEqual(cacheControlPaths(sent()), []);
      const mid: Messages = [{ role: 'system', content: text('mid', 2500) }, { role: 'user', content: 'q' }];
      await t.openai.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: mid }, session('mid'));
      assert.deepEqual(cacheControlPaths(sent()), []);
      await t.openai.chat.completions.create({ model: SONNET, messages: mid }, session('mid'));
      assert.deepEqual(cacheControlPaths(sent()), ['system.0', 'messages.0.0']);
    });

    test('none without a session by default, none with X-Gateway-Prompt-Cache: off; "on" places them without a session', async () => {
      await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop() });
      assert.deepEqual(cacheControlPaths(sent()), [], 'no session');
      await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop() }, { headers: { 'X-Gateway-Session-Id': 's', 'X-Gateway-Prompt-Cache': 'off' } });
      assert.deepEqual(cacheControlPaths(sent()), [], 'turned off');
      await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop() }, { headers: { 'X-Gateway-Prompt-Cache': 'on' } });
      assert.deepEqual(cacheControlPaths(sent()), ['system.0', 'messages.3.1', 'messages.4.1'], 'turned on');
    });

    test('an unknown X-Gateway-Prompt-Cache value is a 400 naming the header, and nothing is sent', async () => {
      const err = await t.openai.chat.completions
        .create({ model: SONNET, messages: agentLoop() }, { headers: { 'X-Gateway-Prompt-Cache': 'sometimes' } })
        .catch((e: unknown) => e);
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 400);
      assert.equal(err.code, 'invalid_header');
      assert.match(err.message, /X-Gateway-Prompt-Cache/);
      assert.equal(gw.fake.calls.count, 0);
    });

    test("a tenant's prompt_cache.enabled false turns the default off (the header still turns it on)", async () => {
      const other = await gw.tenant();
      const patch = await gw.api('/api/v1/tenant', { method: 'PATCH', token: other.session, body: { settings: { prompt_cache: { enabled: false } } } });
      assert.equal(patch.status, 200);
      await other.openai.chat.completions.create({ model: SONNET, messages: agentLoop() }, session('s'));
      assert.deepEqual(cacheControlPaths(sent()), []);
      await other.openai.chat.completions.create({ model: SONNET, messages: agentLoop() }, { headers: { 'X-Gateway-Session-Id': 's', 'X-Gateway-Prompt-Cache': 'on' } });
      assert.equal(cacheControlPaths(sent()).length, 3);
    });

    test("the client's own cache_control is kept as sent and counts against the four", async () => {
      const hour = { type: 'ephemeral', ttl: '1h' };
      const messages = agentLoop();
      messages[0] = { role: 'system', content: [{ type: 'text', text: LONG, cache_control: hour }] } as never;
      messages[1] = { role: 'user', content: [{ type: 'text', text: 'a', cache_control: hour }, { type: 'text', text: 'b', cache_control: { type: 'ephemeral' } }] } as never;
      await t.openai.chat.completions.create({ model: SONNET, messages }, session('own'));
      const body = sent();
      assert.deepEqual(cacheControlPaths(body), ['system.0', 'messages.0.0', 'messages.0.1', 'messages.4.1'], 'the newest turn only');
      assert.deepEqual(body.system[0].cache_control, hour);
      assert.deepEqual(body.messages[0].content[0].cache_control, hour);
      assert.equal(gw.fake.calls.last()!.route, 'anthropic.messages');
    });

    test('OpenAI: prompt_cache_key from tenant and session, stable across turns, never the raw ids; the client\'s own kept', async () => {
      const model = 'openai/gpt-4o-mini';
      const messages: Messages = [{ role: 'user', content: 'hello' }];
      await t.openai.chat.completions.create({ model, messages }, session('conv-1'));
      const key = sent().prompt_cache_key as string;
      assert.match(key, /^gw-[A-Za-z0-9_-]{32}$/);
      assert.ok(!key.includes(t.tenantId) && !key.includes('conv-1'));
      await t.openai.chat.completions.create({ model, messages: [...messages, { role: 'assistant', content: 'hi' }, { role: 'user', content: 'more' }] }, session('conv-1'));
      assert.equal(sent().prompt_cache_key, key, 'stable over the session');
      await t.openai.chat.completions.create({ model, messages }, session('conv-2'));
      assert.notEqual(sent().prompt_cache_key, key, 'another session, another key');
      const other = await gw.tenant();
      await other.openai.chat.completions.create({ model, messages }, session('conv-1'));
      assert.notEqual(sent().prompt_cache_key, key, 'another tenant, another key');
      await t.openai.chat.completions.create({ model, messages, prompt_cache_key: 'mine' }, session('conv-1'));
      assert.equal(sent().prompt_cache_key, 'mine');
      await t.openai.chat.completions.create({ model, messages });
      assert.equal(sent().prompt_cache_key, undefined, 'no session: no key');
      assert.ok(!JSON.stringify(sent()).includes('cache_control'));
    });

    test('providers that may refuse the field never get it (Mistral, Groq); xAI gets its header', async () => {
      const other = await gw.tenant({ providers: ['mistral', 'groq', 'xai'] });
      for (const model of ['mistral/mistral-small-latest', 'groq/llama-3.1-8b-instant']) {
        await other.openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }, session('s'));
        assert.equal(sent().prompt_cache_key, undefined, model);
      }
      await other.openai.chat.completions.create({ model: 'xai/grok-3-mini', messages: [{ role: 'user', content: 'hi' }] }, session('s'));
      assert.equal(sent().prompt_cache_key, undefined);
      assert.match(String(gw.fake.calls.last()!.headers['x-grok-conv-id']), /^gw-/);
    });

    test('re-placed on every attempt: a retry and a fallback to another Anthropic model carry the same breakpoints', async () => {
      const routing = { fallbacks: { [SONNET]: ['anthropic/claude-opus-4-1'] }, default_fallbacks: false };
      assert.equal((await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { routing } } })).status, 200);
      try {
        // The first try and its two retries fail; the fallback answers.
        gw.fake.setBehaviour({ fault: '500' }, { requests: 3 });
        const { response } = await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop(), tools: TOOLS }, session('fallback')).withResponse();
        assert.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-opus-4-1');
        const sentBodies = gw.fake.calls.recent.filter((c) => c.route === 'anthropic.messages').map((c) => c.body as { model: string });
        assert.deepEqual(
          sentBodies.map((b) => b.model),
          ['claude-sonnet-4-5', 'claude-sonnet-4-5', 'claude-sonnet-4-5', 'claude-opus-4-1'],
        );
        for (const body of sentBodies) assert.deepEqual(cacheControlPaths(body), ['system.0', 'messages.3.1', 'messages.4.1'], body.model);
      } finally {
        await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { routing: null } } });
      }
    });

    /** Within 2 % of `expected`: the gateway models the provider's cache in its own token counts, scaled to the provider's. */
    const near = (actual: number, expected: number, what: string) =>
      assert.ok(Math.abs(actual - expected) <= Math.abs(expected) * 0.02 + 1e-12, `${what}: ${actual} vs ${expected}`);

    test('with the simulation on, a client without cache hints: the gateway claims what its breakpoints earned, the premium first', async () => {
      gw.fake.setBehaviour({ promptCache: true });
      const sonnet = catalogEntry('anthropic', 'claude-sonnet-4-5')!;
      const first = await t.openai.chat.completions.create({ model: SONNET, messages: agentLoop() }, session('sim-1')).withResponse();
      const firstRow = await usageRecord(gw, first.response.headers.get('x-gateway-request-id')!);
      assert.equal(firstRow.cached_tokens, 0);
      assert.ok(firstRow.cache_write_tokens > 1500);
      const premium = (firstRow.cache_write_tokens * (sonnet.cacheWrite! - sonnet.input)) / 1e6;
      near(firstRow.saved_prompt_cache_usd, -premium, 'a negative saving: the premium');
      near(Number(first.response.headers.get('x-gateway-cost-saved')), -premium, 'the header');

      const next: Messages = [...agentLoop(), { role: 'assistant', content: 'done reading' }, { role: 'user', content: 'now fix it' }];
      const second = await t.openai.chat.completions.create({ model: SONNET, messages: next, stream: true, stream_options: { include_usage: true } }, session('sim-1')).withResponse();
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of second.data) usage = chunk.usage ?? usage;
      const row = await usageRecord(gw, second.response.headers.get('x-gateway-request-id')!);
      assert.equal(row.cached_tokens, firstRow.cache_write_tokens, 'the whole first prompt is read');
      assert.equal(usage?.prompt_tokens_details?.cached_tokens, row.cached_tokens, 'reported to the client');
      // Sent directly, this client would have read nothing: everything its cache did is the gateway's breakpoints' doing.
      const saved = (row.cached_tokens * (sonnet.input - sonnet.cachedInput) - row.cache_write_tokens * (sonnet.cacheWrite! - sonnet.input)) / 1e6;
      assert.ok(saved > 0);
      near(row.saved_prompt_cache_usd, saved, 'claimed');
      assert.ok(Math.abs(row.cost_saved_usd - row.saved_prompt_cache_usd) < 1e-12);
    });

    test('with the simulation on, a cache-aware client: reads at its own breakpoints are its own, the gateway claims about nothing', async () => {
      gw.fake.setBehaviour({ promptCache: true });
      const mark = (messages: Messages): Messages =>
        messages.map((m, i) =>
          (m.role === 'system' || i === messages.length - 1) && typeof m.content === 'string'
            ? ({ ...m, content: [{ type: 'text', text: m.content, cache_control: { type: 'ephemeral' } }] } as unknown as OpenAI.ChatCompletionMessageParam)
            : m,
        );
      await t.openai.chat.completions.create({ model: SONNET, messages: mark(agentLoop()) }, session('aware-1'));
      const next: Messages = [...agentLoop(), { role: 'assistant', content: 'done reading' }, { role: 'user', content: 'now fix it' }];
      const { response } = await t.openai.chat.completions.create({ model: SONNET, messages: mark(next) }, session('aware-1')).withResponse();
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.ok(row.cached_tokens > 1500, 'the client read its own previous turn');
      const sonnet = catalogEntry('anthropic', 'claude-sonnet-4-5')!;
      const measured = (row.cached_tokens * (sonnet.input - sonnet.cachedInput) - row.cache_write_tokens * (sonnet.cacheWrite! - sonnet.input)) / 1e6;
      assert.ok(Math.abs(row.saved_prompt_cache_usd) <= measured * 0.02, `claimed ${row.saved_prompt_cache_usd} of ${measured}`);
      assert.ok(Math.abs(row.cost_saved_usd) <= measured * 0.02);
    });

    test("with the simulation on: an OpenAI session reads its previous turn, and that is the provider's caching, not the gateway's", async () => {
      gw.fake.setBehaviour({ promptCache: true });
      const model = 'openai/gpt-4o-mini';
      await t.openai.chat.completions.create({ model, messages: agentLoop() }, session('sim-2'));
      const { data, response } = await t.openai.chat.completions
        .create({ model, messages: [...agentLoop(), { role: 'assistant', content: 'ok' }, { role: 'user', content: 'go on' }] }, session('sim-2'))
        .withResponse();
      const cached = data.usage!.prompt_tokens_details!.cached_tokens!;
      assert.ok(cached >= 1024 && cached % 128 === 0, `${cached}`);
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.equal(row.cached_tokens, cached);
      assert.equal(row.saved_prompt_cache_usd, 0, 'the prompt_cache_key the gateway added is not shown to change anything');
      const mini = catalogEntry('openai', 'gpt-4o-mini')!;
      const own = (cached * (mini.input - mini.cachedInput)) / 1e6;
      assert.ok(Math.abs(row.saved_provider_cache_usd - own) < 1e-12, "reported as the provider's own caching");
      assert.ok(Math.abs(Number(response.headers.get('x-gateway-provider-cache-saved')) - own) < 1e-9);
      assert.equal(row.cost_saved_usd, 0);
      assert.equal(response.headers.get('x-gateway-cost-saved'), '0');
    });

    test('no plan, no claim: cached tokens the gateway did not ask for are priced but not counted as saved', async () => {
      gw.fake.setBehaviour({ promptTokens: 100, cachedTokens: 1000 }, { requests: 1 });
      const { response } = await t.openai.chat.completions.create({ model: SONNET, messages: [{ role: 'user', content: 'q' }] }).withResponse();
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.equal(row.cached_tokens, 1000);
      assert.equal(row.saved_prompt_cache_usd, 0);
    });
  });
}
