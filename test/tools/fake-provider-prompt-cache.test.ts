import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import OpenAI from 'openai';
import { countPromptTokens } from '../../src/gateway/tokens.ts';
import { OpenAiPromptCache } from '../../tools/fake-provider/prompt-cache-openai.ts';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';

/**
 * The fake provider's prompt-cache simulation, through the official SDKs:
 * Anthropic's explicit breakpoints (reads, writes, minimum, lookback, TTL,
 * per key, the 4-breakpoint limit) and OpenAI's automatic prefix caching
 * (1024 tokens, 128-token steps, machines and prompt_cache_key).
 */

/** About `tokens` o200k tokens of distinct text, seeded so that two texts differ from their first word. */
function text(seed: string, tokens: number): string {
  const words: string[] = [];
  for (let i = 0; countTokens(words.join(' ')) < tokens; i++) words.push(`${seed}${i}`, 'alpha', 'beta', 'gamma', 'delta');
  return words.join(' ');
}

const cc = { type: 'ephemeral' as const };
const SYSTEM = text('sys', 1500);

describe('fake provider prompt-cache simulation, Anthropic', () => {
  let fake: FakeProvider;
  let clock = 1_000_000;
  const client = (key = 'sk-ant-one') => new Anthropic({ baseURL: fake.url, apiKey: key, maxRetries: 0, logLevel: 'off' });
  before(async () => {
    fake = await createFakeProvider({ behaviour: { promptCache: true }, promptCache: { now: () => clock } });
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  const ask = (system: Anthropic.TextBlockParam[], messages: Anthropic.MessageParam[], key?: string, model = 'claude-sonnet-test') =>
    client(key).messages.create({ model, max_tokens: 10, system, messages });

  test('off by default: cache_control changes nothing, token counts are the old estimates', async () => {
    const plain = await createFakeProvider();
    try {
      const c = new Anthropic({ baseURL: plain.url, apiKey: 'k', maxRetries: 0, logLevel: 'off' });
      const body = { model: 'claude-fake', max_tokens: 10, system: [{ type: 'text' as const, text: SYSTEM, cache_control: cc }], messages: [{ role: 'user' as const, content: 'hi' }] };
      const first = await c.messages.create(body);
      const second = await c.messages.create(body);
      assert.equal(second.usage.cache_read_input_tokens, 0);
      assert.equal(first.usage.cache_creation_input_tokens, 0);
      assert.equal(second.usage.input_tokens, Math.ceil((SYSTEM.length + 2) / 4));
    } finally {
      await plain.close();
    }
  });

  test('a breakpoint on the system prompt: written once, then read; input_tokens is the rest', async () => {
    const system = [{ type: 'text' as const, text: SYSTEM, cache_control: cc }];
    const first = await ask(system, [{ role: 'user', content: 'first question' }]);
    const written = first.usage.cache_creation_input_tokens!;
    assert.equal(written, countTokens(SYSTEM) + 3, 'the system prompt and its framing');
    assert.equal(first.usage.cache_read_input_tokens, 0);
    const second = await ask(system, [{ role: 'user', content: 'another question entirely' }]);
    assert.equal(second.usage.cache_read_input_tokens, written);
    assert.equal(second.usage.cache_creation_input_tokens, 0);
    const total = second.usage.input_tokens + written;
    assert.equal(total, countTokens(SYSTEM) + 3 + 3 + countTokens('another question entirely') + 3);
  });

  test('an agent loop: the final block marked each turn reads the previous turn and writes only the new part', async () => {
    const system = [{ type: 'text' as const, text: SYSTEM }];
    const u1 = text('u', 300);
    const a1 = text('a', 200);
    const u2 = text('v', 300);
    const turn1 = await ask(system, [{ role: 'user', content: [{ type: 'text', text: u1, cache_control: cc }] }]);
    const prefix1 = turn1.usage.cache_creation_input_tokens!;
    assert.ok(prefix1 > 1024);
    const turn2 = await ask(system, [
      { role: 'user', content: [{ type: 'text', text: u1 }] },
      { role: 'assistant', content: [{ type: 'text', text: a1 }] },
      { role: 'user', content: [{ type: 'text', text: u2, cache_control: cc }] },
    ]);
    assert.equal(turn2.usage.cache_read_input_tokens, prefix1, 'found 2 blocks before the breakpoint (lookback)');
    assert.equal(turn2.usage.cache_creation_input_tokens, countTokens(a1) + 3 + countTokens(u2) + 3);
    assert.equal(turn2.usage.input_tokens, 3, 'only the reply framing is uncached');
  });

  test('no cache below the model minimum: 1024 tokens for Sonnet 4.5, 4096 for Haiku 4.5', async () => {
    const mid = [{ type: 'text' as const, text: text('mid', 2500), cache_control: cc }];
    const sonnet = await ask(mid, [{ role: 'user', content: 'q' }]);
    assert.ok(sonnet.usage.cache_creation_input_tokens! > 2500);
    const haiku = await ask(mid, [{ role: 'user', content: 'q' }], undefined, 'claude-haiku-4-test');
    assert.equal(haiku.usage.cache_creation_input_tokens, 0);
    const small = await ask([{ type: 'text', text: text('small', 900), cache_control: cc }], [{ role: 'user', content: 'q' }]);
    assert.equal(small.usage.cache_creation_input_tokens, 0);
  });

  test('entries expire after 5 minutes unused; a hit refreshes them; caches are per API key', async () => {
    const system = [{ type: 'text' as const, text: SYSTEM, cache_control: cc }];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'q' }];
    await ask(system, messages);
    clock += 4 * 60_000;
    assert.ok((await ask(system, messages)).usage.cache_read_input_tokens! > 0, 'within the TTL');
    clock += 4 * 60_000;
    assert.ok((await ask(system, messages)).usage.cache_read_input_tokens! > 0, 'the hit refreshed it');
    assert.equal((await ask(system, messages, 'sk-ant-two')).usage.cache_read_input_tokens, 0, 'another key has its own cache');
    clock += 5 * 60_000 + 1;
    const late = await ask(system, messages);
    assert.equal(late.usage.cache_read_input_tokens, 0, 'expired');
    assert.ok(late.usage.cache_creation_input_tokens! > 0, 'written again');
  });

  test('a stream reports the reads and writes in message_start and message_delta', async () => {
    const body = { model: 'claude-sonnet-test', max_tokens: 10, system: [{ type: 'text' as const, text: SYSTEM, cache_control: cc }], messages: [{ role: 'user' as const, content: 'q' }] };
    await client().messages.create(body);
    const stream = client().messages.stream(body);
    const final = await stream.finalMessage();
    assert.equal(final.usage.cache_read_input_tokens, countTokens(SYSTEM) + 3);
    assert.equal(final.usage.cache_creation_input_tokens, 0);
  });

  test('more than 4 cache_control blocks, or a 1h one after a 5m one: 400 as Anthropic answers', async () => {
    const blocks = Array.from({ length: 5 }, (_, i) => ({ type: 'text' as const, text: `part ${i}`, cache_control: cc }));
    await assert.rejects(ask(blocks, [{ role: 'user', content: 'q' }]), (err: InstanceType<typeof Anthropic.APIError>) => {
      assert.equal(err.status, 400);
      assert.match(err.message, /A maximum of 4 blocks with cache_control may be provided\. Found 5\./);
      return true;
    });
    const ttl = [
      { type: 'text' as const, text: 'a', cache_control: cc },
      { type: 'text' as const, text: 'b', cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } },
    ];
    await assert.rejects(ask(ttl, [{ role: 'user', content: 'q' }]), (err: InstanceType<typeof Anthropic.APIError>) => err.status === 400);
  });

  test('the ledger sums what was billed per model', async () => {
    const system = [{ type: 'text' as const, text: SYSTEM, cache_control: cc }];
    const a = await ask(system, [{ role: 'user', content: 'q' }]);
    const b = await ask(system, [{ role: 'user', content: 'q' }]);
    const row = fake.ledger.byModel().get('claude-sonnet-test')!;
    assert.equal(row.calls, 2);
    assert.equal(row.cachedTokens, b.usage.cache_read_input_tokens);
    assert.equal(row.cacheWriteTokens, a.usage.cache_creation_input_tokens);
    const inputs = (m: Anthropic.Message) => m.usage.input_tokens + m.usage.cache_read_input_tokens! + m.usage.cache_creation_input_tokens!;
    assert.equal(row.promptTokens, inputs(a) + inputs(b));
  });
});

describe('fake provider prompt-cache simulation, OpenAI', () => {
  let fake: FakeProvider;
  let client: OpenAI;
  before(async () => {
    fake = await createFakeProvider({ behaviour: { promptCache: true } });
    client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: 'sk-fake', maxRetries: 0 });
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  const messages = (turns: number): OpenAI.ChatCompletionMessageParam[] => {
    const out: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: SYSTEM }];
    for (let i = 0; i < turns; i++) out.push({ role: 'user', content: text(`q${i}`, 150) }, { role: 'assistant', content: text(`r${i}`, 100) });
    out.push({ role: 'user', content: 'and now?' });
    return out;
  };

  test('prompt_tokens is the count the gateway makes (gpt-tokenizer, framing per message, tools)', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'read', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }];
    const body = { model: 'gpt-4o-mini', messages: messages(2), tools };
    const res = await client.chat.completions.create(body);
    assert.equal(res.usage?.prompt_tokens, countPromptTokens(body.messages, tools));
  });

  test('with a stable prompt_cache_key, a growing conversation reads its earlier prefix in 128-token steps', async () => {
    const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: messages(1), prompt_cache_key: 'session-1' });
    assert.equal(first.usage?.prompt_tokens_details?.cached_tokens, 0);
    const second = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: messages(2), prompt_cache_key: 'session-1' });
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    const shared = countPromptTokens(messages(1).slice(0, -1)) - 3; // the messages both share, without the reply framing
    assert.ok(cached >= 1024 && (cached - 1024) % 128 === 0, `${cached}`);
    assert.ok(cached <= shared && shared - cached < 128 + 10, `${cached} of ${shared} shared`);
  });

  test('below 1024 tokens nothing is cached', async () => {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: text('short', 900) }], prompt_cache_key: 'k' };
    await client.chat.completions.create(body);
    const again = await client.chat.completions.create(body);
    assert.equal(again.usage?.prompt_tokens_details?.cached_tokens, 0);
  });

  test('a 20-turn session reads the turn before it on every turn, with a stable key or without one', async () => {
    const replay = async (key: string | undefined) => {
      fake.reset();
      const history: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: SYSTEM }];
      let previous = 0;
      let readPrevious = 0;
      for (let t = 0; t < 20; t++) {
        history.push({ role: 'user', content: text(`u${t}`, 300) });
        const res = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: history, ...(key ? { prompt_cache_key: key } : {}) });
        const cached = res.usage!.prompt_tokens_details!.cached_tokens!;
        if (previous > 0 && cached >= previous - 128 - 3) readPrevious++;
        previous = res.usage!.prompt_tokens;
        history.push({ role: 'assistant', content: text(`a${t}`, 200) });
      }
      return readPrevious;
    };
    assert.equal(await replay('session-7'), 19, 'with a key: every turn after the first');
    assert.equal(await replay(undefined), 19, 'without: every turn starts alike, so lands where the turn before it did');
  });

  test('routing by the first 256 tokens: prompts starting alike share a machine and its cache; a key moves them', async () => {
    const first = messages(1);
    const other: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: SYSTEM }, { role: 'user', content: text('another', 400) }];
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: first });
    const alike = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: other });
    assert.ok(alike.usage!.prompt_tokens_details!.cached_tokens! >= 1024, 'the other prompt read the shared system prompt: the same machine');
    const keyed = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: other, prompt_cache_key: 'tenant-b' });
    assert.equal(keyed.usage!.prompt_tokens_details!.cached_tokens, 0, 'with a key it went to another machine, whose cache is empty');

    const cache = new OpenAiPromptCache(64, 60_000, () => 0);
    const body = (m: OpenAI.ChatCompletionMessageParam[], key?: string) => ({ model: 'gpt-4o-mini', messages: m, ...(key ? { prompt_cache_key: key } : {}) });
    const machine = (m: OpenAI.ChatCompletionMessageParam[], key?: string, apiKey = 'sk-a') => cache.simulate(body(m, key), apiKey).machine;
    assert.equal(machine(first), machine(other), 'the same first 256 tokens, the same machine');
    assert.equal(machine(first), machine(first), 'deterministic: no load balancing by request');
    assert.notEqual(machine(other, 'tenant-b'), machine(other), 'a key changes the machine');
    assert.equal(machine(other, 'tenant-b'), machine(first, 'tenant-b'), 'the same key and start, the same machine');
    const starts = new Set(['a', 'b', 'c', 'd', 'e', 'f'].map((seed) => machine([{ role: 'system', content: text(seed, 1500) }, { role: 'user', content: 'q' }])));
    assert.ok(starts.size > 1, 'different starts spread over the machines');
  });

  test('a stream reports cached_tokens in its usage chunk', async () => {
    const body = { model: 'gpt-4o-mini', messages: messages(1), prompt_cache_key: 's' };
    await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    assert.ok(usage!.prompt_tokens_details!.cached_tokens! >= 1024);
  });
});
