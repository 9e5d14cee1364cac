import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { catalogEntry, isCatalogId, listedModels, resolveModel } from '../../src/gateway/catalog/catalog.ts';
import { costUsd, formatUsd } from '../../src/gateway/catalog/cost.ts';
import { MODELS } from '../../src/gateway/catalog/models.ts';
import { promptCacheSavedUsd } from '../../src/gateway/prompt-cache/savings.ts';
import { findProvider } from '../../src/gateway/providers/registry.ts';

const usage = (u: Partial<Parameters<typeof costUsd>[0]>) => ({
  promptTokens: 0,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  completionTokens: 0,
  reasoningTokens: 0,
  ...u,
});

describe('model catalog', () => {
  test('every entry names a registered provider, a positive context window and dated, non-negative prices', () => {
    for (const m of MODELS) {
      assert.ok(findProvider(m.provider), `${m.provider} is registered`);
      assert.ok(m.contextWindow > 0);
      for (const price of [m.input, m.cachedInput, m.output, m.cacheWrite ?? 0]) assert.ok(price >= 0);
      assert.ok(m.cachedInput <= m.input, `${m.id}: a cache read never costs more than input`);
      assert.match(m.pricesRead, /^\d{4}-\d{2}-\d{2}$/);
    }
    const keys = MODELS.map((m) => `${m.provider}/${m.id}`);
    assert.equal(new Set(keys).size, keys.length, 'no model listed twice');
  });

  test('provider/model resolves to that provider, listed or not', () => {
    const keyed = new Set(['openai', 'openai-compatible']);
    const listed = resolveModel('openai/gpt-4o-mini', keyed);
    assert.ok(listed.ok);
    assert.equal(listed.resolved.provider.id, 'openai');
    assert.equal(listed.resolved.model, 'gpt-4o-mini');
    assert.equal(listed.resolved.entry, catalogEntry('openai', 'gpt-4o-mini'));
    const selfHosted = resolveModel('openai-compatible/llama3.1:8b', keyed);
    assert.ok(selfHosted.ok);
    assert.equal(selfHosted.resolved.model, 'llama3.1:8b');
    assert.equal(selfHosted.resolved.entry, undefined, 'unlisted: cost unknown, never guessed');
  });

  test('a model id containing slashes keeps them after the provider', () => {
    const r = resolveModel('openrouter/openai/gpt-4o-mini', new Set(['openrouter']));
    assert.ok(r.ok);
    assert.equal(r.resolved.provider.id, 'openrouter');
    assert.equal(r.resolved.model, 'openai/gpt-4o-mini');
    assert.ok(r.resolved.entry);
  });

  test('a bare id resolves when exactly one keyed provider lists it', () => {
    const r = resolveModel('gpt-4o-mini', new Set(['openai', 'anthropic']));
    assert.ok(r.ok);
    assert.equal(r.resolved.provider.id, 'openai');
  });

  test('a bare id listed by no keyed provider names the key that is missing', () => {
    assert.deepEqual(resolveModel('claude-haiku-4-5', new Set(['openai'])), { ok: false, reason: 'no_key', provider: 'anthropic' });
    assert.deepEqual(resolveModel('anthropic/claude-haiku-4-5', new Set(['openai'])), { ok: false, reason: 'no_key', provider: 'anthropic' });
  });

  test('an unknown id or provider is unknown', () => {
    assert.equal(resolveModel('no-such-model', new Set(['openai'])).ok, false);
    const r = resolveModel('nosuchprovider/gpt-4o', new Set(['openai']));
    assert.ok(!r.ok && r.reason === 'unknown');
  });

  test('a bare id listed by two keyed providers is ambiguous; naming the provider resolves it', () => {
    const base = catalogEntry('openai', 'gpt-4o-mini')!;
    const catalog = [base, { ...base, provider: 'openrouter' }];
    const amb = resolveModel('gpt-4o-mini', new Set(['openai', 'openrouter']), catalog);
    assert.deepEqual(amb, { ok: false, reason: 'ambiguous', candidates: ['openai/gpt-4o-mini', 'openrouter/gpt-4o-mini'] });
    const one = resolveModel('gpt-4o-mini', new Set(['openrouter']), catalog);
    assert.ok(one.ok && one.resolved.provider.id === 'openrouter');
    const named = resolveModel('openrouter/gpt-4o-mini', new Set(['openai', 'openrouter']), catalog);
    assert.ok(named.ok && named.resolved.entry?.provider === 'openrouter');
  });

  test("Anthropic's names: dated ids and -latest aliases priced as the entry they name, sent as written; other claude-* names unpriced", () => {
    const keyed = new Set(['openai', 'anthropic']);
    const sonnet = catalogEntry('anthropic', 'claude-sonnet-4-5')!;
    for (const name of ['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-sonnet-4-5-latest', 'anthropic/claude-sonnet-4-5-20250929']) {
      const r = resolveModel(name, keyed);
      assert.ok(r.ok, name);
      assert.equal(r.resolved.provider.id, 'anthropic');
      assert.equal(r.resolved.model, name.replace('anthropic/', ''), 'the upstream gets the name as written');
      assert.equal(r.resolved.entry, sonnet, name);
      assert.equal(isCatalogId(r.resolved), name === 'claude-sonnet-4-5', 'only the catalog id itself is cached by name');
    }
    const haiku35 = resolveModel('claude-3-5-haiku-20241022', keyed);
    assert.ok(haiku35.ok && haiku35.resolved.entry === catalogEntry('anthropic', 'claude-3-5-haiku-latest'), "a dated id of a model listed by its -latest alias");
    for (const name of ['claude-opus-5-5', 'claude-sonnet-4-5-2025092', 'claude-sonnet-4-5-2025092x', 'claude-x/y']) {
      const r = resolveModel(name, keyed);
      assert.ok(r.ok && r.resolved.provider.id === 'anthropic' && r.resolved.model === name && r.resolved.entry === undefined, name);
    }
    assert.deepEqual(resolveModel('claude-opus-5-5', new Set(['openai'])), { ok: false, reason: 'no_key', provider: 'anthropic' });
    assert.ok(!resolveModel('claude-', keyed).ok, 'the prefix alone names no model');
    assert.ok(!resolveModel('Claude-opus-5-5', keyed).ok, 'case matters, as it does upstream');
  });

  test('listedModels lists only the keyed providers', () => {
    const list = listedModels(new Set(['anthropic']));
    assert.ok(list.length > 0);
    assert.ok(list.every((m) => m.provider === 'anthropic'));
    assert.deepEqual(listedModels(new Set()), []);
  });
});

describe('cost', () => {
  const mini = catalogEntry('openai', 'gpt-4o-mini')!; // 0.15 in, 0.075 cached, 0.6 out
  const sonnet = catalogEntry('anthropic', 'claude-sonnet-4-5')!; // 3 in, 0.3 read, 3.75 write, 15 out

  test('plain input and output at their prices', () => {
    assert.equal(costUsd(usage({ promptTokens: 1_000_000, completionTokens: 1_000_000 }), mini), 0.15 + 0.6);
  });

  test('cached input is priced as cached, once (not also as input)', () => {
    const c = costUsd(usage({ promptTokens: 1_000_000, cachedTokens: 400_000 }), mini)!;
    assert.ok(Math.abs(c - (0.6 * 0.15 + 0.4 * 0.075)) < 1e-12);
  });

  test('Anthropic cache reads and writes each at their own price, never twice', () => {
    const c = costUsd(usage({ promptTokens: 1_000_000, cachedTokens: 500_000, cacheWriteTokens: 200_000, completionTokens: 1000 }), sonnet)!;
    const expected = 0.3 * 3 + 0.5 * 0.3 + 0.2 * 3.75 + 0.001 * 15;
    assert.ok(Math.abs(c - expected) < 1e-12, `${c} vs ${expected}`);
  });

  test('reasoning tokens are within completion tokens and not charged again', () => {
    const a = costUsd(usage({ completionTokens: 1000, reasoningTokens: 800 }), mini);
    const b = costUsd(usage({ completionTokens: 1000 }), mini);
    assert.equal(a, b);
  });

  test('a cache write on a provider without a write price is ordinary input', () => {
    const c = costUsd(usage({ promptTokens: 1_000_000, cacheWriteTokens: 1_000_000 }), mini);
    assert.equal(c, 0.15);
  });

  test('no catalog entry: unknown, formatted as such', () => {
    assert.equal(costUsd(usage({ promptTokens: 10 }), undefined), undefined);
    assert.equal(formatUsd(undefined), 'unknown');
  });

  test('formatUsd: plain decimals, no exponent, trailing zeros trimmed', () => {
    assert.equal(formatUsd(0), '0');
    assert.equal(formatUsd(-0.00075), '-0.00075', 'a negative saving (a cache write premium)');
    assert.equal(formatUsd(-1e-12), '0');
    assert.equal(formatUsd(0.0000015), '0.0000015');
    assert.equal(formatUsd(1.5), '1.5');
    assert.equal(formatUsd(12), '12');
  });
});

describe('prompt-cache prices', () => {
  test("Anthropic models: a 5-minute cache write costs 1.25 x input, a read 0.1 x input (Anthropic's multipliers)", () => {
    const anthropic = MODELS.filter((m) => m.provider === 'anthropic' || m.id.startsWith('anthropic/'));
    assert.ok(anthropic.length >= 4);
    for (const m of anthropic) {
      assert.ok(Math.abs(m.cacheWrite! - 1.25 * m.input) < 1e-9, `${m.id} write`);
      assert.ok(Math.abs(m.cachedInput - 0.1 * m.input) < 1e-9, `${m.id} read`);
    }
  });

  test('OpenAI models: cached input below input, no separate write price', () => {
    for (const m of MODELS.filter((m) => m.provider === 'openai')) {
      assert.ok(m.cachedInput < m.input, m.id);
      assert.equal(m.cacheWrite, undefined, m.id);
    }
  });

  const sonnet = catalogEntry('anthropic', 'claude-sonnet-4-5')!;
  const mini = catalogEntry('openai', 'gpt-4o-mini')!;

  test('the saving: reads at (input - cached) per token, less the write premium', () => {
    const saved = promptCacheSavedUsd(usage({ promptTokens: 1_300_000, cachedTokens: 1_000_000, cacheWriteTokens: 200_000 }), sonnet);
    assert.ok(Math.abs(saved - (1 * (3 - 0.3) - 0.2 * (3.75 - 3))) < 1e-12);
    assert.ok(Math.abs(promptCacheSavedUsd(usage({ promptTokens: 1_000_000, cachedTokens: 400_000 }), mini) - 0.4 * 0.075) < 1e-12);
  });

  test('a first turn that only writes saves less than nothing; the saving plus the cost is the uncached cost', () => {
    const u = usage({ promptTokens: 2_000_000, cacheWriteTokens: 1_500_000, completionTokens: 1000 });
    assert.ok(promptCacheSavedUsd(u, sonnet) < 0);
    const uncached = costUsd(usage({ promptTokens: 2_000_000, completionTokens: 1000 }), sonnet)!;
    assert.ok(Math.abs(costUsd(u, sonnet)! + promptCacheSavedUsd(u, sonnet) - uncached) < 1e-12);
    const read = usage({ promptTokens: 2_000_000, cachedTokens: 1_500_000, cacheWriteTokens: 300_000, completionTokens: 1000 });
    assert.ok(Math.abs(costUsd(read, sonnet)! + promptCacheSavedUsd(read, sonnet) - uncached) < 1e-12);
  });

  test('no usage or no catalog entry: nothing claimed', () => {
    assert.equal(promptCacheSavedUsd(undefined, sonnet), 0);
    assert.equal(promptCacheSavedUsd(usage({ cachedTokens: 10 }), undefined), 0);
  });
});
