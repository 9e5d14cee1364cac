import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { chunksToCompletion, completionToChunks } from '../../../src/gateway/surfaces/chat-completions/answer-format.ts';
import { cacheKey } from '../../../src/gateway/cache/cache-key.ts';
import { canonicalJson } from '../../../src/gateway/cache/canonical-json.ts';
import type { CachedAnswer } from '../../../src/gateway/cache/cached-answer.ts';
import { MemoryAnswerStore } from '../../../src/gateway/cache/memory-store.ts';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import type { ChatRequest } from '../../../src/gateway/providers/types.ts';
import { ManualClock } from '../../../src/platform/clock.ts';

const request = (fields: Record<string, unknown> = {}): ChatRequest => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'hello' }],
  temperature: 0,
  ...fields,
});
const key = (body: ChatRequest, tenant = 'tenant-a', target = 'openai/gpt-4o-mini') => cacheKey(tenant, target, body);

/** The same object with its keys (at every depth) in another order. */
function reorder(value: unknown, order: (keys: string[]) => string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => reorder(v, order));
  if (value === null || typeof value !== 'object') return value;
  // A null prototype: assigning "__proto__" (fast-check generates it) makes an own key, as JSON.parse does.
  const out: Record<string, unknown> = Object.create(null);
  for (const k of order(Object.keys(value))) out[k] = reorder((value as Record<string, unknown>)[k], order);
  return out;
}

describe('cache key', () => {
  test('key order and insignificant whitespace do not change it', () => {
    const body = request({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } } } } }] });
    const text = JSON.stringify(reorder(body, (keys) => keys.reverse()), null, 4).replaceAll(':', ' :\n\t ');
    assert.equal(key(JSON.parse(text) as ChatRequest), key(body));
  });

  test('any permutation of keys at any depth gives the same key (property)', () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 8 }), fc.func(fc.integer()), (extra, rank) => {
        const body = request(extra as Record<string, unknown>);
        const shuffled = reorder(body, (keys) => [...keys].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1))) as ChatRequest;
        assert.equal(key(shuffled), key(body));
      }),
      { numRuns: 300 },
    );
  });

  test('every field that can change the answer changes the key', () => {
    const base = key(request());
    const changed: Record<string, unknown>[] = [
      { temperature: 0.1 },
      { top_p: 0.5 },
      { max_tokens: 10 },
      { max_completion_tokens: 10 },
      { stop: ['x'] },
      { seed: 7 },
      { n: 2 },
      { reasoning_effort: 'high' },
      { response_format: { type: 'json_object' } },
      { tools: [{ type: 'function', function: { name: 'g' } }] },
      { tool_choice: 'required' },
      { some_unknown_field: true },
      { messages: [{ role: 'user', content: 'hello!' }] },
    ];
    const keys = new Set([base]);
    for (const fields of changed) {
      const k = key(request(fields));
      assert.notEqual(k, base, JSON.stringify(fields));
      keys.add(k);
    }
    assert.equal(keys.size, changed.length + 1, 'each change gives a key of its own');
    assert.notEqual(key(request({ temperature: undefined })), base, 'a missing temperature is not temperature 0');
  });

  test('fields that cannot change the answer, and the model as named, leave it alone', () => {
    const base = key(request());
    for (const fields of [{ user: 'u1' }, { stream: true }, { stream_options: { include_usage: true } }, { metadata: { a: '1' } }, { model: 'openai/gpt-4o-mini' }]) {
      assert.equal(key(request(fields)), base, JSON.stringify(fields));
    }
  });

  test('the tenant and the routed model are part of the key', () => {
    assert.notEqual(key(request(), 'tenant-b'), key(request()));
    assert.notEqual(key(request(), 'tenant-a', 'openai/gpt-4o'), key(request()));
  });

  test('canonical JSON sorts keys at every depth and keeps array order', () => {
    assert.equal(canonicalJson({ b: [3, { d: 1, c: 2 }], a: 'x', u: undefined }), '{"a":"x","b":[3,{"c":2,"d":1}]}');
  });

  test("canonical JSON orders keys as Array.prototype.sort does (the key's versioned format): integer-like, astral and any other keys", () => {
    // The order the format was defined with: Object.keys, then the built-in sort (UTF-16 code units).
    const reference = (value: unknown): string => {
      if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
      if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
      const record = value as Record<string, unknown>;
      const parts = Object.keys(record)
        .sort()
        .filter((k) => record[k] !== undefined)
        .map((k) => `${JSON.stringify(k)}:${reference(record[k])}`);
      return `{${parts.join(',')}}`;
    };
    const key = fc.oneof(fc.string({ maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 4 }), fc.nat({ max: 200 }).map(String));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 1 }), fc.dictionary(key, tie('node'), { maxKeys: 12 }), fc.array(tie('node'), { maxLength: 3 })),
    })).node;
    fc.assert(fc.property(value, (v) => canonicalJson(v) === reference(v)));
    // Objects with more keys than are sorted by insertion, in the same order.
    const wide = fc.dictionary(key, fc.integer(), { minKeys: 17, maxKeys: 60 });
    fc.assert(fc.property(wide, (v) => canonicalJson(v) === reference(v)));
  });

  // A client's body may hold an object of any size: its keys are not sorted in time growing with their count squared
  // (by insertion, 100,000 keys took 32 s here; with the built-in sort, under 0.1 s). In a worker, so that the
  // deadline can fire while it works.
  test('canonical JSON of an object with 100,000 keys in reverse order ends within 10 s', async () => {
    const module = new URL('../../../src/gateway/cache/canonical-json.ts', import.meta.url).href;
    const worker = new Worker(
      `import(${JSON.stringify(module)}).then(({ canonicalJson }) => {
        const wide = {};
        for (let i = 100000; i > 0; i--) wide['k' + String(i).padStart(6, '0')] = i;
        require('node:worker_threads').parentPort.postMessage(canonicalJson(wide).slice(0, 30));
      })`,
      { eval: true },
    );
    let deadline: NodeJS.Timeout | undefined;
    try {
      const head = await Promise.race([
        once(worker, 'message').then(([m]) => m as string),
        new Promise<never>((_, reject) => {
          deadline = setTimeout(() => reject(new Error('canonicalJson took more than 10 s for 100,000 keys')), 10_000);
        }),
      ]);
      assert.equal(head, '{"k000001":1,"k000002":2,"k000');
    } finally {
      clearTimeout(deadline);
      await worker.terminate();
    }
  });
});

describe('answer shapes', () => {
  const chunk = (delta: unknown, finish: string | null = null) =>
    JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 5, model: 'm', system_fingerprint: 'fp', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });

  test('chunks join into a completion: content, reasoning, tool-call fragments by index, finish reason, usage without cost', () => {
    const chunks = [
      chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 't1', type: 'function', function: { name: 'f', arguments: '' } }] }),
      chunk({ reasoning_content: 'think ' }),
      chunk({ reasoning_content: 'more' }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
      chunk({}, 'tool_calls'),
    ];
    const usage = JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 5, model: 'm', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, cost: 0.1 } });
    const completion = JSON.parse(chunksToCompletion(chunks, usage));
    assert.deepEqual(completion, {
      id: 'c1',
      object: 'chat.completion',
      created: 5,
      model: 'm',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, reasoning_content: 'think more', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
      system_fingerprint: 'fp',
    });
  });

  test('a completion cut into chunks joins back into the same message', () => {
    const original = {
      id: 'c2',
      object: 'chat.completion',
      created: 9,
      model: 'm',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'hi there', refusal: null, reasoning_content: 'hmm' }, logprobs: null, finish_reason: 'stop' },
        { index: 1, message: { role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }] }, logprobs: null, finish_reason: 'tool_calls' },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    };
    const { chunks, usageChunk } = completionToChunks(JSON.stringify(original));
    assert.ok(chunks.every((c) => JSON.parse(c).object === 'chat.completion.chunk'));
    assert.deepEqual(JSON.parse(usageChunk!).choices, []);
    assert.deepEqual(JSON.parse(chunksToCompletion(chunks, usageChunk)), original);
  });
});

describe('in-memory store', () => {
  const answer = (text: string): CachedAnswer => ({ v: 1, provider: 'openai', model: 'm', createdAt: 0, usage: undefined, costUsd: 0, completion: text });
  /** The bytes one entry takes in the ring (its record), read off a store holding only it. */
  async function recordSize(a: CachedAnswer, key = 'a'): Promise<number> {
    const store = new MemoryAnswerStore({ clock: new ManualClock(), maxBytes: 1e6, maxEntryBytes: 1e6 });
    await store.set('t', key, a, 60_000);
    return store.bytes;
  }

  test('bounded by bytes: the least recently used entries go first', async () => {
    const one = await recordSize(answer('x'.repeat(100)));
    const store = new MemoryAnswerStore({ clock: new ManualClock(), maxBytes: 3 * one, maxEntryBytes: 10_000 });
    for (const k of ['a', 'b', 'c']) await store.set('t', k, answer('x'.repeat(100)), 60_000);
    assert.ok(await store.get('t', 'a'), 'a is now the most recently used');
    await store.set('t', 'd', answer('x'.repeat(100)), 60_000);
    assert.equal(await store.get('t', 'b'), undefined, 'b, least recently used, was evicted');
    assert.ok(await store.get('t', 'a'));
    assert.ok(await store.get('t', 'c'));
    assert.ok(await store.get('t', 'd'));
    assert.ok(store.bytes <= 3 * one);
    await store.set('t', 'big', answer('x'.repeat(20_000)), 60_000);
    assert.equal(await store.get('t', 'big'), undefined, 'an entry over the per-entry cap is not kept');
    assert.equal(store.size, 3);
  });

  test('entries expire with their TTL (by the clock)', async () => {
    const clock = new ManualClock();
    const store = new MemoryAnswerStore({ clock, maxBytes: 1e6, maxEntryBytes: 1e6 });
    await store.set('t', 'k', answer('a'), 1000);
    clock.advance(999);
    assert.ok(await store.get('t', 'k'));
    clock.advance(1);
    assert.equal(await store.get('t', 'k'), undefined);
    assert.equal(store.bytes, 0);
  });

  test('an answer comes back as stored: completion or chunks, any text, every field', async () => {
    const store = new MemoryAnswerStore({ clock: new ManualClock(), maxBytes: 1e6, maxEntryBytes: 1e6 });
    const streamed: CachedAnswer = {
      v: 1,
      provider: 'anthropic',
      model: 'claude-x',
      createdAt: 1234,
      usage: { promptTokens: 5, completionTokens: 7, cachedTokens: 2, cacheWriteTokens: 1, reasoningTokens: 3 },
      costUsd: 0.000125,
      chunks: ['{"a":"é 😀 \\u0000"}', '', 'ﻼ\u200f\n'],
      usageChunk: '{"usage":{}}',
    };
    await store.set('t', 'k1', streamed, 60_000);
    await store.set('t', 'k2', answer('{"x":"\u0000 \u{1F600} é"}'), 60_000);
    assert.deepEqual(await store.get('t', 'k1'), streamed);
    assert.deepEqual(await store.get('t', 'k2'), answer('{"x":"\u0000 \u{1F600} é"}'));
  });

  test('whatever the sequence of stores and reads, a read answers the last answer kept under its key or nothing, the newest entry is kept, and the bound holds (property)', async () => {
    const text = fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 80 }));
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('set' as const),
        key: fc.integer({ min: 0, max: 12 }),
        texts: fc.option(fc.array(text, { maxLength: 6 }), { nil: undefined }),
        body: text,
        ttl: fc.integer({ min: 1, max: 50 }),
        usage: fc.option(
          fc.record({ promptTokens: fc.nat(), cachedTokens: fc.nat(), cacheWriteTokens: fc.nat(), completionTokens: fc.nat(), reasoningTokens: fc.nat() }, { noNullPrototype: true }),
          { nil: undefined },
        ),
        costUsd: fc.option(fc.double({ noNaN: true }), { nil: undefined }),
        model: fc.string({ unit: 'grapheme', maxLength: 20 }),
      }),
      fc.record({ kind: fc.constant('get' as const), key: fc.integer({ min: 0, max: 12 }) }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 20 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 200, max: 5000 }), fc.array(op, { maxLength: 120 }), async (capacity, ops) => {
        const clock = new ManualClock();
        const store = new MemoryAnswerStore({ clock, maxBytes: capacity, maxEntryBytes: capacity });
        const last = new Map<string, { answer: CachedAnswer; expiresAt: number }>();
        let serial = 0;
        for (const o of ops) {
          if (o.kind === 'tick') {
            clock.advance(o.ms);
            continue;
          }
          const key = `key-${o.key}`;
          if (o.kind === 'set') {
            const base = { v: 1 as const, provider: 'p', model: `${o.model}${serial++}`, createdAt: clock.now(), usage: o.usage, costUsd: o.costUsd };
            const a: CachedAnswer = o.texts ? { ...base, chunks: o.texts, usageChunk: o.body } : { ...base, completion: o.body };
            await store.set('t', key, a, o.ttl);
            // One too large for the ring is not kept, and an earlier answer to the same request may still be read.
            if ((await recordSize(a, key)) <= capacity) {
              last.set(key, { answer: a, expiresAt: clock.now() + o.ttl });
              assert.deepEqual(await store.get('t', key), a, 'the newest entry is kept when it fits');
            }
          } else {
            const got = await store.get('t', key);
            const expected = last.get(key);
            if (got !== undefined) {
              assert.ok(expected && expected.expiresAt > clock.now(), 'never an expired answer');
              assert.deepEqual(got, expected.answer);
            }
          }
          assert.ok(store.bytes <= capacity);
        }
      }),
      { numRuns: 300, seed: 20261125 },
    );
  });

  test('the ring goes round many times with entries of every size: memory stays at the bound, reads stay right', async () => {
    const store = new MemoryAnswerStore({ clock: new ManualClock(), maxBytes: 64 * 1024, maxEntryBytes: 64 * 1024 });
    for (let i = 0; i < 20_000; i++) {
      await store.set('t', `k${i}`, answer('y'.repeat((i * 7919) % 3000)), 60_000);
      if (i % 3 === 0) await store.get('t', `k${i - 1}`);
    }
    assert.ok(store.bytes <= 64 * 1024 && store.bytes > 32 * 1024, `held ${store.bytes} bytes`);
    const newest = await store.get('t', 'k19999');
    assert.equal(newest?.completion, 'y'.repeat((19_999 * 7919) % 3000));
  });
});

describe('in-memory store: a share per tenant (GATEWAY_CACHE_TENANT_SHARE_PERCENT)', () => {
  const answer = (text: string): CachedAnswer => ({ v: 1, provider: 'openai', model: 'm', createdAt: 0, usage: undefined, costUsd: 0, completion: text });

  test("one tenant storing far more than the ring holds forgets its own oldest entries, never another tenant's", async () => {
    const capacity = 64 * 1024;
    const store = new MemoryAnswerStore({ clock: new ManualClock(), maxBytes: capacity, maxEntryBytes: capacity, tenantSharePercent: 25 });
    store.set('b', 'b1', answer('kept'.repeat(200)), 60_000);
    store.set('b', 'b2', answer('also kept'.repeat(100)), 60_000);
    for (let i = 0; i < 2000; i++) {
      store.set('a', `a${i}`, answer('y'.repeat(500 + ((i * 7919) % 1500))), 60_000);
      if (i % 5 === 0) store.get('a', `a${i - 1}`);
      assert.ok(store.tenantBytes('a') <= capacity / 4, `A holds ${store.tenantBytes('a')} bytes after ${i + 1} stores`);
    }
    assert.equal(store.get('b', 'b1')?.completion, 'kept'.repeat(200), "B's entries outlive A's churn");
    assert.equal(store.get('b', 'b2')?.completion, 'also kept'.repeat(100));
    assert.ok(store.get('a', 'a1999'), "A's newest entry is kept");
    assert.equal(store.get('a', 'a0'), undefined, "A's oldest went");
    assert.ok(store.tenantBytes('a') > capacity / 8, 'A still uses most of its share');
    assert.equal(store.bytes, store.tenantBytes('a') + store.tenantBytes('b'));
  });

  test('an entry larger than a tenant\'s share is not kept; a single tenant at 100 % has the whole ring', async () => {
    const store = new MemoryAnswerStore({ clock: new ManualClock(), maxBytes: 8000, maxEntryBytes: 8000, tenantSharePercent: 25 });
    store.set('a', 'big', answer('z'.repeat(3000)), 60_000);
    assert.equal(store.get('a', 'big'), undefined);
    const whole = new MemoryAnswerStore({ clock: new ManualClock(), maxBytes: 8000, maxEntryBytes: 8000, tenantSharePercent: 100 });
    whole.set('a', 'big', answer('z'.repeat(3000)), 60_000);
    whole.set('a', 'big2', answer('z'.repeat(3000)), 60_000);
    assert.ok(whole.get('a', 'big') && whole.get('a', 'big2'));
  });

  test('whatever several tenants store and read, none holds more than its share, reads answer the last answer kept or nothing, and the counts add up (property)', async () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('set' as const),
        tenant: fc.integer({ min: 0, max: 3 }),
        key: fc.integer({ min: 0, max: 15 }),
        body: fc.string({ maxLength: 400 }),
        ttl: fc.integer({ min: 1, max: 50 }),
      }),
      fc.record({ kind: fc.constant('get' as const), tenant: fc.integer({ min: 0, max: 3 }), key: fc.integer({ min: 0, max: 15 }) }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1, max: 20 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 500, max: 6000 }), fc.integer({ min: 1, max: 100 }), fc.array(op, { maxLength: 150 }), async (capacity, percent, ops) => {
        const clock = new ManualClock();
        const store = new MemoryAnswerStore({ clock, maxBytes: capacity, maxEntryBytes: capacity, tenantSharePercent: percent });
        const share = Math.floor((capacity * percent) / 100);
        const last = new Map<string, { answer: CachedAnswer; expiresAt: number }>();
        let serial = 0;
        for (const o of ops) {
          if (o.kind === 'tick') {
            clock.advance(o.ms);
            continue;
          }
          const tenant = `t${o.tenant}`;
          // Cache keys are the tenant's own (cache-key.ts puts the tenant in each).
          const key = `${tenant}:key-${o.key}`;
          if (o.kind === 'set') {
            const a: CachedAnswer = { v: 1, provider: 'p', model: `m${serial++}`, createdAt: clock.now(), usage: undefined, costUsd: undefined, completion: o.body };
            const before = store.tenantBytes(tenant);
            store.set(tenant, key, a, o.ttl);
            if (store.tenantBytes(tenant) !== before || store.get(tenant, key) !== undefined) {
              last.set(key, { answer: a, expiresAt: clock.now() + o.ttl });
              assert.deepEqual(store.get(tenant, key), a, 'the newest entry is kept when it fits in the share');
            }
          } else {
            const got = store.get(tenant, key);
            const expected = last.get(key);
            if (got !== undefined) {
              assert.ok(expected && expected.expiresAt > clock.now(), 'never an expired answer');
              assert.deepEqual(got, expected.answer);
            }
          }
          let sum = 0;
          for (let t = 0; t < 4; t++) {
            assert.ok(store.tenantBytes(`t${t}`) <= share, `t${t} holds ${store.tenantBytes(`t${t}`)} of a share of ${share}`);
            sum += store.tenantBytes(`t${t}`);
          }
          assert.equal(sum, store.bytes);
          assert.ok(store.bytes <= capacity);
        }
      }),
      { numRuns: 300, seed: 20260311 },
    );
  });
});

test('the cache is on by default and configurable from the environment', () => {
  const env = { DATA_DIR: '/tmp', GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64) };
  const on = loadGatewayConfig(env).cache;
  assert.equal(on.enabled, true);
  assert.equal(on.ttlSeconds, 3600);
  const off = loadGatewayConfig({ ...env, GATEWAY_CACHE_ENABLED: 'false', GATEWAY_CACHE_TTL_SECONDS: '60', GATEWAY_CACHE_MAX_BYTES: '1000' }).cache;
  assert.deepEqual([off.enabled, off.ttlSeconds, off.maxBytes], [false, 60, 1000]);
  assert.throws(() => loadGatewayConfig({ ...env, GATEWAY_CACHE_TTL_SECONDS: '0' }), /GATEWAY_CACHE_TTL_SECONDS/);
});
