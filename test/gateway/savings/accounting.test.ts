import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import type { TokenUsage } from '../../../src/gateway/providers/types.ts';
import { accountSavings } from '../../../src/gateway/savings/account.ts';
import { type CacheState, modelAutomatic, modelExplicit } from '../../../src/gateway/savings/cache-model.ts';
import { type Breakpoints, ElementCounts, ProfileBuilder } from '../../../src/gateway/savings/prompt-profile.ts';
import { ConversationShadow } from '../../../src/gateway/savings/session-shadow.ts';

/**
 * The savings accounting's parts on their own: the prompt profile, the
 * cache models, the accounting's formulas and the bounded store of
 * conversations. Through the real app: test/gateway/pipeline/prompt-cache.test.ts
 * and compaction.test.ts; on the corpus: the savings benchmark.
 */

type Message = Record<string, unknown>;
const counts = new ElementCounts();
const profile = (messages: Message[], options: { tools?: unknown; anthropic?: boolean; gateway?: Breakpoints } = {}) =>
  new ProfileBuilder(counts).build(messages, options.tools, options.anthropic === true, options.gateway);
const words = (seed: string, n: number) => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');
const mini = catalogEntry('openai', 'gpt-4o-mini')!;
const sonnet = catalogEntry('anthropic', 'claude-sonnet-4-5')!;
const marked = (text: string) => [{ type: 'text', text, cache_control: { type: 'ephemeral' } }];

const SYSTEM: Message = { role: 'system', content: words('rule', 1500) };
const turn1: Message[] = [SYSTEM, { role: 'user', content: 'read the file' }, { role: 'assistant', content: 'reading' }, { role: 'user', content: words('file', 800) }];
const turn2: Message[] = [...turn1, { role: 'assistant', content: 'done' }, { role: 'user', content: 'next' }];

const usageOf = (prompt: number, cached: number, written = 0): TokenUsage => ({
  promptTokens: prompt,
  cachedTokens: cached,
  cacheWriteTokens: written,
  completionTokens: 10,
  reasoningTokens: 0,
});

describe('prompt profiles', () => {
  test('a prefix has the same digest whatever follows; for Anthropic a cache mark or a string turned into a text part changes nothing', async () => {
    const a = await profile(turn1);
    const b = await profile(turn2);
    for (let i = 0; i < a.hashes.length; i++) assert.equal(a.hashes[i], b.hashes[i]);
    // Anthropic's cache compares blocks without their marks, a string being one text block.
    const c = await profile([SYSTEM, { role: 'user', content: marked('read the file') }, ...turn1.slice(2)], { anthropic: true });
    assert.deepEqual([...c.hashes], [...(await profile(turn1, { anthropic: true })).hashes]);
    assert.equal(c.client[1], 1, 'the client marked the first user message');
    const d = await profile([SYSTEM, { role: 'user', content: 'read the other file' }, ...turn1.slice(2)]);
    assert.equal(d.hashes[0], a.hashes[0]);
    assert.notEqual(d.hashes[1], a.hashes[1]);
    assert.notEqual(d.hashes[3], a.hashes[3], 'a change carries to every later prefix');
  });

  test('Anthropic order: tools, then every system message, then the rest; the latest exchange starts at the last assistant message', async () => {
    const p = await profile([{ role: 'user', content: 'hi' }, { role: 'system', content: 'late rules' }, { role: 'assistant', content: 'yes' }], {
      anthropic: true,
      tools: [{ type: 'function', function: { name: 'read' } }],
    });
    assert.equal(p.hashes.length, 4);
    const q = await profile([{ role: 'system', content: 'late rules' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: 'yes' }], {
      anthropic: true,
      tools: [{ type: 'function', function: { name: 'read' } }],
    });
    assert.deepEqual([...p.hashes], [...q.hashes]);
    assert.equal(p.latestExchange, 3);
    assert.equal(p.firstUser, 2);
  });
});

describe('cache models', () => {
  test('automatic: the prefix shared with the previous request, from 1,024 tokens in steps of 128; nothing once expired', async () => {
    const a = await profile(turn1);
    const b = await profile(turn2);
    const first = modelAutomatic(a, undefined, 0);
    assert.equal(first.read, 0);
    const second = modelAutomatic(b, first.state, 1000);
    const shared = a.tokens[a.hashes.length - 1]!;
    assert.equal(second.read, 1024 + Math.floor((shared - 1024) / 128) * 128);
    assert.equal(modelAutomatic(b, first.state, 6 * 60_000).read, 0, 'five minutes later');
  });

  test('explicit: a read only at a breakpoint or within 20 blocks before one, a write up to the last breakpoint', async () => {
    const marks = (p: { client: Uint8Array }) => (i: number) => p.client[i] === 1;
    const withMark = (messages: Message[]) => messages.map((m, i) => (i === messages.length - 1 ? { ...m, content: marked(String(m.content)) } : m));
    const a = await profile(withMark(turn1), { anthropic: true });
    const b = await profile(withMark(turn2), { anthropic: true });
    const first = modelExplicit(a, marks(a), undefined, 1024, 0);
    assert.equal(first.read, 0);
    assert.equal(first.write, a.tokens[3]);
    const second = modelExplicit(b, marks(b), first.state, 1024, 1000);
    assert.equal(second.read, a.tokens[3], 'the previous breakpoint, two blocks back');
    assert.equal(second.write, b.tokens[5]! - a.tokens[3]!);
    // Thirty short tool results between: the previous breakpoint is out of the look-back.
    const far = [...turn1, ...Array.from({ length: 30 }, (_, i) => ({ role: 'user', content: `r${i}` }))];
    const c = await profile(withMark(far), { anthropic: true });
    assert.equal(modelExplicit(c, marks(c), first.state, 1024, 1000).read, 0);
    // No breakpoint: neither read nor written (a client without cache hints).
    const none = await profile(turn2, { anthropic: true });
    const bare = modelExplicit(none, () => false, first.state, 1024, 1000);
    assert.deepEqual([bare.read, bare.write], [0, 0]);
  });
});

describe('the accounting', () => {
  test("OpenAI, nothing compacted: the provider's caching is all the provider's; the gateway claims nothing", async () => {
    const a = await profile(turn1);
    const b = await profile(turn2);
    const first = accountSavings({ client: a, sent: a, explicit: false, minimum: 1024, previous: undefined, usage: usageOf(a.total, 0), entry: mini, now: 0 });
    const usage = usageOf(b.total, 2048);
    const second = accountSavings({ client: b, sent: b, explicit: false, minimum: 1024, previous: first.next, usage, entry: mini, now: 1000 });
    assert.equal(second.compactionUsd, 0);
    assert.equal(second.promptCacheUsd, 0);
    assert.ok(Math.abs(second.providerCacheUsd - (2048 * (mini.input - mini.cachedInput)) / 1e6) < 1e-15);
  });

  test('compaction: a token removed from the cached prefix is priced at the cached price, net of the rewrite it caused; a new one at the input price', async () => {
    // The client's history holds a long tool result; the gateway replaced it (in both turns) by a reference.
    const long: Message = { role: 'tool', tool_call_id: 'c1', content: words('out', 3000) };
    const short: Message = { role: 'tool', tool_call_id: 'c1', content: '[gateway: removed]' };
    const call: Message = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{}' } }] };
    const analysis: Message = { role: 'assistant', content: words('finding', 600) };
    const r1 = [SYSTEM, { role: 'user', content: 'go' }, call, long, analysis, { role: 'user', content: 'and then' }];
    const c1 = [SYSTEM, { role: 'user', content: 'go' }, call, short, analysis, { role: 'user', content: 'and then' }];
    const r2 = [...r1, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }];
    const c2 = [...c1, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }];
    const [pr1, pc1, pr2, pc2] = await Promise.all([profile(r1), profile(c1), profile(r2), profile(c2)]);
    const removed = pr1.total - pc1.total;
    const first = accountSavings({ client: pr1, sent: pc1, explicit: false, minimum: 1024, previous: undefined, usage: usageOf(pc1.total, 0), entry: mini, now: 0 });
    assert.ok(Math.abs(first.compactionUsd - (removed * mini.input) / 1e6) < 1e-12, 'a first turn: the input price');
    const second = accountSavings({ client: pr2, sent: pc2, explicit: false, minimum: 1024, previous: first.next, usage: usageOf(pc2.total, 1024), entry: mini, now: 1000 });
    // Directly, the whole first turn would have been read: the removed tokens (and the rounding of the cached prefix) at the cached price.
    const atCached = (removed * mini.cachedInput) / 1e6;
    const rounding = (2 * 128 * (mini.input - mini.cachedInput)) / 1e6;
    assert.ok(Math.abs(second.compactionUsd - atCached) <= rounding, `${second.compactionUsd}: the cached price of ${removed} tokens is ${atCached}`);

    // A compaction that changes the middle only now (turn 2) makes the rest (the analysis) be sent again at the input price.
    const late = accountSavings({ client: pr2, sent: pc2, explicit: false, minimum: 1024, previous: { ...first.next, sent0: accountSavings({ client: pr1, sent: pr1, explicit: false, minimum: 1024, previous: undefined, usage: usageOf(pr1.total, 0), entry: mini, now: 0 }).next.sent0 }, usage: usageOf(pc2.total, 1024), entry: mini, now: 1000 });
    assert.ok(late.compactionUsd < second.compactionUsd, 'the rewrite is a cost of compaction');
  });

  test("Anthropic: the gateway's breakpoints earn against a client without hints, nothing against one that marks its own", async () => {
    const gateway: Breakpoints = { tools: false, system: true, messages: [3] };
    const a = await profile(turn1, { anthropic: true, gateway });
    const b = await profile(turn2, { anthropic: true, gateway: { tools: false, system: true, messages: [5] } });
    const first = accountSavings({ client: a, sent: a, explicit: true, minimum: 1024, previous: undefined, usage: usageOf(a.total, 0, a.tokens[3]!), entry: sonnet, now: 0 });
    assert.ok(first.promptCacheUsd < 0, 'a first turn pays the write premium');
    const second = accountSavings({ client: b, sent: b, explicit: true, minimum: 1024, previous: first.next, usage: usageOf(b.total, a.tokens[3]!, b.tokens[5]! - a.tokens[3]!), entry: sonnet, now: 1000 });
    assert.ok(second.promptCacheUsd > 0);
    assert.ok(Math.abs(second.providerCacheUsd) < 1e-12, 'nothing of it is the client’s own');
  });

  test('without the previous request but with cache reads, it assumes the client did as well as it could: no claim on a guess', async () => {
    const b = await profile(turn2, { anthropic: true, gateway: { tools: false, system: false, messages: [5] } });
    const result = accountSavings({ client: b, sent: b, explicit: true, minimum: 1024, previous: undefined, usage: usageOf(b.total, 1000, 100), entry: sonnet, now: 0 });
    assert.equal(result.compactionUsd, 0);
  });
});

describe('the store of conversations', () => {
  const state = async (n: number): Promise<{ client: CacheState }> => {
    const p = await profile(Array.from({ length: n }, (_, i) => ({ role: 'user', content: `m${i}` })));
    return { client: { profile: p, cached: [], at: 0 } };
  };

  test("bounded in all and per tenant: a tenant filling its share pushes out only its own conversations", async () => {
    const shadow = new ConversationShadow(200_000, 0.25);
    const big = await state(500); // about 11 KB
    shadow.set('quiet', 'one', big);
    for (let i = 0; i < 100; i++) shadow.set('noisy', `c${i}`, big);
    assert.ok(shadow.get('quiet', 'one'), "the quiet tenant's conversation is still there");
    assert.equal(shadow.get('noisy', 'c0'), undefined, "the noisy tenant's oldest went");
    assert.ok(shadow.get('noisy', 'c99'));
    assert.ok(shadow.bytes <= 200_000);
    for (let t = 0; t < 40; t++) shadow.set(`t${t}`, 'x', big);
    assert.ok(shadow.bytes <= 200_000, 'the whole store stays within its bytes');
  });

  test('a prompt larger than a tenant share is not kept', async () => {
    const shadow = new ConversationShadow(10_000, 0.25);
    shadow.set('t', 'huge', await state(500));
    assert.equal(shadow.get('t', 'huge'), undefined);
    assert.equal(shadow.bytes, 0);
  });
});

describe('routing', () => {
  test("against the model the client named: the price difference, less the warm cache the answering model did not have", async () => {
    const sonnetHaiku = catalogEntry('anthropic', 'claude-haiku-4-5')!;
    const marks = (messages: Message[]) => messages.map((m, i) => (i === messages.length - 1 ? { ...m, content: marked(String(m.content)) } : m));
    const a = await profile(marks(turn1), { anthropic: true });
    const b = await profile(marks(turn2), { anthropic: true });
    // The client's previous turn went to Sonnet directly and cached there.
    const warm = accountSavings({ client: a, sent: a, explicit: true, minimum: 1024, previous: undefined, usage: usageOf(a.total, 0, a.tokens[3]!), entry: sonnet, now: 0 });
    const base = { client: b, explicit: true, minimum: 1024, entry: sonnet };
    const usage = usageOf(b.total, 0, b.tokens[5]!);
    const cold = accountSavings({ client: b, sent: b, explicit: true, minimum: 1024, previous: undefined, usage, entry: sonnetHaiku, baseline: { ...base, previous: warm.next.client }, now: 1000 });
    const naive = accountSavings({ client: b, sent: b, explicit: true, minimum: 1024, previous: undefined, usage, entry: sonnetHaiku, baseline: { ...base, previous: undefined }, now: 1000 });
    assert.ok(naive.routingUsd > 0, 'a cheaper model, both caches cold: a saving');
    assert.ok(cold.routingUsd < naive.routingUsd, 'Sonnet would have read its warm cache: routing saved less');
    assert.ok(cold.nextBaseline, "the client's state at the named model is carried on");
  });
});
