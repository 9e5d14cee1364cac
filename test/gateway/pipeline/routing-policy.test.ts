import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { ManualClock } from '../../../src/platform/clock.ts';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import type { ChatRequest } from '../../../src/gateway/providers/types.ts';
import { chooseRoute } from '../../../src/gateway/routing/choose-route.ts';
import { CircuitBreakers } from '../../../src/gateway/routing/circuit-breaker.ts';
import { type RouteModel, RoutingPolicy } from '../../../src/gateway/routing/policy.ts';
import { PromptFit } from '../../../src/gateway/routing/prompt-fit.ts';
import { promptShape } from '../../../src/gateway/routing/prompt-shape.ts';
import { planAfterFailure, retryDelayMs } from '../../../src/gateway/routing/retry.ts';
import type { RoutingSettings } from '../../../src/gateway/settings/routing.ts';
import { stickyRoutes } from '../../../src/gateway/routing/sticky-routes.ts';

/** GATEWAY_STICKY_SESSIONS and GATEWAY_STICKY_SESSIONS_PER_TENANT's defaults. */
const BOUNDS = { sessions: 100_000, perTenant: 25_000 };

const both = new Set(['openai', 'anthropic']);
const fitOf = (body: Partial<ChatRequest>) => {
  const full = { model: 'auto', messages: [{ role: 'user', content: 'hello' }], ...body } as ChatRequest;
  return new PromptFit(full, promptShape(full));
};
const policy = (settings: RoutingSettings = {}, keyed: ReadonlySet<string> = both) => new RoutingPolicy(settings, keyed);
const easy = fitOf({});
const hard = fitOf({ messages: [{ role: 'user', content: 'Prove the theorem, then implement it:\n```ts\nlet x = 1;\n```\nand analyze the trade-offs.' }] });

describe('routing policy (pure)', () => {
  test('the cheapest model of the needed tier among the keyed providers', () => {
    assert.equal(policy().cheapest(1, easy)?.ref, 'openai/gpt-5-nano');
    assert.equal(policy({}, new Set(['anthropic'])).cheapest(1, easy)?.ref, 'anthropic/claude-3-5-haiku-latest');
    const t2 = policy().cheapest(2, easy)!;
    assert.ok(t2.entry!.tier >= 2);
  });

  test('context windows: a model too small for prompt plus requested output is passed over', () => {
    const big = fitOf({ max_tokens: 150_000 });
    assert.equal(big.fits(policy().resolve('openai/gpt-4o')!.entry), false, '128k window');
    assert.equal(big.fits(policy().resolve('anthropic/claude-sonnet-4-5')!.entry), true, '200k window');
    const chosen = policy({ tiers: { '1': ['openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest'] } }).cheapest(1, big);
    assert.equal(chosen?.ref, 'anthropic/claude-3-5-haiku-latest', 'gpt-4o-mini is cheaper but its window is 128k');
    assert.equal(fitOf({ max_tokens: 2_000_000 }).fits(policy().resolve('openai/gpt-4.1')!.entry), false);
  });

  test('a prompt over the cheap upper bound is counted with the tokenizer, once', () => {
    const text = 'word '.repeat(30_000); // 150k bytes: the bound says "maybe not", the count says 30k tokens
    const fit = fitOf({ messages: [{ role: 'user', content: text }] });
    assert.equal(fit.fits(policy().resolve('openai/gpt-4o')!.entry), true);
    assert.ok(fit.promptTokens() < 40_000);
  });

  test('images go only to vision models; JSON output and n > 1 not to Anthropic', () => {
    const image = fitOf({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] });
    assert.equal(policy({}, new Set(['groq'])).cheapest(1, image), undefined, "Groq's Llama models take no images");
    const json = fitOf({ response_format: { type: 'json_object' } });
    assert.equal(policy({}, new Set(['anthropic'])).cheapest(1, json), undefined);
    assert.equal(policy().cheapest(1, json)?.provider.id, 'openai');
  });

  test('tenant tiers replace the catalog tiers; min_tier and a held session tier raise the need, never lower it', () => {
    const p = policy({ tiers: { '1': ['anthropic/claude-3-5-haiku-latest'], '2': ['openai/gpt-4.1'], '3': ['anthropic/claude-sonnet-4-5'] } });
    assert.equal(chooseRoute(p, easy, { minTier: 1, held: undefined, requested: undefined })?.chosen.ref, 'anthropic/claude-3-5-haiku-latest');
    assert.equal(chooseRoute(p, easy, { minTier: 2, held: undefined, requested: undefined })?.chosen.ref, 'openai/gpt-4.1');
    const held = { model: 'anthropic/claude-sonnet-4-5', tier: 3 as const };
    const sticky = chooseRoute(p, easy, { minTier: 1, held, requested: undefined })!;
    assert.equal(sticky.chosen.ref, 'anthropic/claude-sonnet-4-5');
    assert.equal(sticky.reason, 'sticky session tier=3');
    const rise = chooseRoute(policy(), hard, { minTier: 1, held: { model: 'openai/gpt-5-nano', tier: 1 }, requested: undefined })!;
    assert.ok(rise.tier >= 2);
    assert.match(rise.reason, /^tier=\d code,math,reasoning; cheapest fit \S+; session tier raised from 1$/);
  });

  test('routing an explicit model never picks a dearer one', () => {
    const p = policy();
    const cheap = chooseRoute(p, easy, { minTier: 1, held: undefined, requested: p.resolve('openai/gpt-4o') })!;
    assert.equal(cheap.chosen.ref, 'openai/gpt-5-nano');
    const kept = chooseRoute(p, hard, { minTier: 1, held: undefined, requested: p.resolve('openai/gpt-4.1-nano') })!;
    assert.equal(kept.chosen.ref, 'openai/gpt-4.1-nano');
    assert.match(kept.reason, /requested model kept/);
  });

  test('fallbacks: the tenant chain (unfit ones skipped), else other providers first, then cheapest', () => {
    const p = policy({ fallbacks: { 'openai/gpt-4.1': ['openai/gpt-4o', 'anthropic/claude-sonnet-4-5'] } });
    const big = fitOf({ max_tokens: 150_000 });
    assert.deepEqual(p.fallbacks(p.resolve('openai/gpt-4.1')!, 'openai/gpt-4.1', big, 2).map((m) => m.ref), ['anthropic/claude-sonnet-4-5']);
    const d = policy().fallbacks(policy().resolve('openai/gpt-4o-mini')!, 'openai/gpt-4o-mini', easy, 2).map((m) => m.ref);
    assert.deepEqual(d, ['anthropic/claude-3-5-haiku-latest', 'openai/gpt-5-nano']);
    assert.deepEqual(policy({ default_fallbacks: false }).fallbacks(policy().resolve('openai/gpt-4o-mini')!, 'x', easy, 2), []);
    assert.deepEqual(policy({ fallbacks: { auto: [] } }).fallbacks(policy().resolve('openai/gpt-5-nano')!, 'auto', easy, 2), [], 'an empty chain means none');
  });

  test('default fallbacks, the cheapest fit and the baseline rank models as a full sort by estimated cost would (property)', () => {
    // The order before the ranking was written as an insertion sort: every candidate priced, sorted by cost, then tier,
    // then listed order; the default chain takes each other provider's cheapest first, then the rest.
    const sorted = (models: RouteModel[], fit: PromptFit) =>
      models
        .map((m, i) => ({ m, i, c: fit.estimate(m.entry) ?? Number.POSITIVE_INFINITY }))
        .sort((a, b) => a.c - b.c || (a.m.tier ?? 9) - (b.m.tier ?? 9) || a.i - b.i)
        .map((x) => x.m);
    const usable = (m: RouteModel, fit: PromptFit) => fit.accepts(m.provider, m.entry) && fit.fits(m.entry);
    const keyedSets = [both, new Set(['openai']), new Set(['anthropic']), new Set(['openai', 'anthropic', 'google'])];
    fc.assert(
      fc.property(
        fc.record({
          keyed: fc.integer({ min: 0, max: keyedSets.length - 1 }),
          chars: fc.integer({ min: 1, max: 20_000 }),
          maxTokens: fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: undefined }),
          image: fc.boolean(),
          json: fc.boolean(),
          n: fc.integer({ min: 1, max: 3 }),
          tier: fc.constantFrom(1, 2, 3),
          pick: fc.nat(),
          length: fc.integer({ min: 0, max: 5 }),
        }),
        (c) => {
          const p = policy({}, keyedSets[c.keyed]!);
          const content: unknown = c.image
            ? [{ type: 'text', text: 'x'.repeat(c.chars) }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }]
            : 'x'.repeat(c.chars);
          const fit = fitOf({
            messages: [{ role: 'user', content }] as ChatRequest['messages'],
            n: c.n,
            ...(c.maxTokens === undefined ? {} : { max_tokens: c.maxTokens }),
            ...(c.json ? { response_format: { type: 'json_object' } } : {}),
          });
          const candidates = p.candidates(c.tier as 1 | 2 | 3);
          if (candidates.length === 0) return;
          const chosen = candidates[c.pick % candidates.length]!;
          const pool = chosen.tier === undefined ? [] : p.candidates(chosen.tier);
          const ranked = sorted(pool.filter((m) => m.ref !== chosen.ref && m.entry !== undefined && usable(m, fit)), fit);
          const seen = new Set<string>();
          const first = ranked.filter((m) => m.provider.id !== chosen.provider.id && !seen.has(m.provider.id) && seen.add(m.provider.id));
          const expected = [...first, ...ranked.filter((m) => !first.includes(m))].slice(0, c.length);
          const got = chosen.tier === undefined || c.length === 0 ? [] : expected;
          assert.deepEqual(p.fallbacks(chosen, chosen.ref, fit, c.length).map((m) => m.ref), got.map((m) => m.ref));
          assert.equal(p.cheapest(c.tier as 1 | 2 | 3, fit)?.ref, sorted(candidates.filter((m) => usable(m, fit)), fit)[0]?.ref);
          const top = ([3, 2, 1] as const).map((t) => sorted(p.candidates(t).filter((m) => m.tier === t && m.entry !== undefined), fit)[0]).find(Boolean);
          assert.equal(p.baseline(fit)?.ref, top?.ref);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("auto's baseline: the tenant's, else the cheapest model of the highest tier", () => {
    assert.equal(policy().baseline(easy)?.entry?.tier, 3);
    assert.equal(policy({ baseline: 'openai/gpt-4o' }).baseline(easy)?.ref, 'openai/gpt-4o');
  });
});

describe('retries and the circuit breaker (pure)', () => {
  const config = loadGatewayConfig({ DATA_DIR: '/tmp', GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64) }).routing;
  const problem = (status: number, headers: Record<string, string> = {}) => new HttpProblem(status, 'x', 'x', { headers });

  test('what follows a failure: 429, 408 and 5xx retry; 401/403 another provider; other 4xx and 499 stop', () => {
    assert.deepEqual(planAfterFailure(problem(429)), { next: 'retry', counts: 'nowhere' });
    assert.deepEqual(planAfterFailure(problem(408)), { next: 'retry', counts: 'nowhere' });
    for (const s of [502, 503, 504]) assert.deepEqual(planAfterFailure(problem(s)), { next: 'retry', counts: 'origin' });
    assert.deepEqual(planAfterFailure(problem(401)), { next: 'other-provider', counts: 'nowhere' });
    assert.deepEqual(planAfterFailure(problem(403)), { next: 'other-provider', counts: 'nowhere' });
    for (const s of [400, 404, 413, 422, 499]) assert.equal(planAfterFailure(problem(s)).next, 'stop');
  });

  test('backoff: Retry-After (seconds or a date) wins; else full jitter under base x 2^n, capped', () => {
    const now = Date.UTC(2026, 0, 1);
    assert.equal(retryDelayMs(0, problem(429, { 'retry-after': '3' }), config, now), 3000);
    assert.equal(retryDelayMs(0, problem(429, { 'retry-after': new Date(now + 2000).toUTCString() }), config, now), 2000);
    assert.equal(retryDelayMs(2, problem(502), config, now, () => 0.999), Math.floor(0.999 * config.retryBaseDelayMs * 4));
    assert.ok(retryDelayMs(30, problem(502), config, now, () => 0.999) < config.retryMaxDelayMs);
  });

  test('a circuit opens after N consecutive failures, skips, half-opens one probe after the cooldown, closes on success', () => {
    const clock = new ManualClock();
    const events: string[] = [];
    const b = new CircuitBreakers({ failures: 2, cooldownMs: 1000, sharedTenants: 3, sharedWindowMs: 60_000, clock, onEvent: (p, e) => events.push(`${p}:${e}`) });
    const k = { own: 'k', origin: 'o', tenantId: 't', provider: 'openai' };
    b.failure(k, 'origin');
    b.success(k);
    b.failure(k, 'origin');
    assert.equal(b.admit(k), true, 'a success in between resets the count');
    b.failure(k, 'origin');
    assert.equal(b.admit(k), false);
    assert.equal(b.retryInMs(k), 1000);
    clock.advance(1000);
    assert.equal(b.admit(k), true, 'the probe');
    assert.equal(b.admit(k), false, 'one probe at a time');
    b.failure(k, 'origin');
    assert.equal(b.admit(k), false, 'a failed probe opens it again');
    clock.advance(1000);
    assert.equal(b.admit(k), true);
    b.success(k);
    assert.equal(b.admit(k), true);
    assert.deepEqual(events, [
      'openai:opened', 'openai:skipped', 'openai:half_open', 'openai:skipped', 'openai:reopened', 'openai:skipped', 'openai:half_open', 'openai:closed',
    ]);
  });

  test('sticky routes in memory: the tier never falls, entries expire', async () => {
    const clock = new ManualClock();
    const sticky = stickyRoutes(undefined, clock, BOUNDS);
    assert.deepEqual(await sticky.raise('t', 's', { model: 'openai/gpt-5-mini', tier: 2 }, 1000), { model: 'openai/gpt-5-mini', tier: 2 });
    assert.deepEqual(await sticky.raise('t', 's', { model: 'openai/gpt-5-nano', tier: 1 }, 1000), { model: 'openai/gpt-5-mini', tier: 2 });
    assert.deepEqual(await sticky.raise('t', 's', { model: 'openai/o4-mini', tier: 3 }, 1000), { model: 'openai/o4-mini', tier: 3 });
    clock.advance(999);
    assert.equal((await sticky.get('s', 1000))?.tier, 3, 'a read renews it');
    clock.advance(1001);
    assert.equal(await sticky.get('s', 1000), undefined);
  });

  test('sticky routes in memory: past the bound, the session used longest ago is forgotten, not one in use', async () => {
    const clock = new ManualClock();
    const sticky = stickyRoutes(undefined, clock, BOUNDS);
    const route = { model: 'openai/gpt-5-mini', tier: 2 as const };
    const hour = 3_600_000;
    // Four tenants with a full share each fill the table.
    for (let i = 0; i < BOUNDS.sessions; i++) await sticky.raise(`t${i % 4}`, `s${i}`, route, hour);
    clock.advance(60_000);
    // s0 was stored first, but is read now: s1 is the one used longest ago.
    assert.ok(sticky.get('s0', hour));
    await sticky.raise('t9', 'new', route, hour);
    assert.ok(sticky.get('s0', hour), 'the session read a minute ago is kept');
    assert.equal(sticky.get('s1', hour), undefined, 'the session used longest ago is forgotten');
    assert.ok(sticky.get('new', hour));
  });

  test("sticky routes in memory: a tenant holding its share replaces its own session used longest ago, never another tenant's", async () => {
    const clock = new ManualClock();
    const sticky = stickyRoutes(undefined, clock, { sessions: 10, perTenant: 3 });
    const route = { model: 'openai/gpt-5-mini', tier: 2 as const };
    const hour = 3_600_000;
    await sticky.raise('b', 'b-session', route, hour);
    for (let i = 0; i < 1000; i++) await sticky.raise('a', `a${i}`, route, hour);
    assert.ok(sticky.get('b-session', hour), "B's session outlives A's thousand");
    assert.deepEqual(
      [0, 996, 997, 998, 999].map((i) => sticky.get(`a${i}`, hour) !== undefined),
      [false, false, true, true, true],
      "A keeps its three newest sessions",
    );
  });
});
