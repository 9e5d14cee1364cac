import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type CounterSpec, countersFor } from '../../../src/gateway/budgets/ledger.ts';
import { limitExceeded, rateLimitHeaders, resetText } from '../../../src/gateway/budgets/limit-replies.ts';
import { MemoryLedger } from '../../../src/gateway/budgets/memory-ledger.ts';

const NOW = Date.UTC(2026, 2, 15, 12, 0, 30);
const estimate = (usd: number, tokens = 100) => ({ requests: 1, tokens, usd });

describe('the in-process ledger', () => {
  test('50 reservations at once against room for 10: exactly 10 admitted, in every counter at once or in none', async () => {
    const ledger = new MemoryLedger(async () => 0);
    const counters = countersFor('t1', 'k1', { usd_per_month: 1 }, { tokens_per_day: 10_000, requests_per_minute: 1000 }, NOW);
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => ledger.reserve(counters, estimate(0.1), NOW)));
    assert.equal(outcomes.filter((o) => o.ok).length, 10);
    const [usd, requests, tokens] = await ledger.read(counters, NOW);
    assert.ok(usd!.used === 0 && Math.abs(usd!.reserved - 1) < 1e-12);
    assert.deepEqual(requests, { used: 0, reserved: 10 }, 'a refused call reserved nothing anywhere');
    assert.deepEqual(tokens, { used: 0, reserved: 1000 });
    for (const o of outcomes) if (o.ok) await o.reservation.settle(estimate(0.01, 10));
    const settled = await ledger.read(counters, NOW);
    assert.ok(Math.abs(settled[0]!.used - 0.1) < 1e-12);
    assert.deepEqual(settled.map((s) => s.reserved), [0, 0, 0], 'nothing held once every call settled (no floating-point residue)');
    assert.deepEqual([settled[1]!.used, settled[2]!.used], [10, 100]);
  });

  test("a window's starting figure is loaded once however many calls arrive together; a failed load is tried again", async () => {
    let loads = 0;
    let fail = true;
    const ledger = new MemoryLedger(async (counter) => {
      loads++;
      await new Promise((r) => setTimeout(r, 5));
      if (fail) {
        fail = false;
        throw new Error('database away');
      }
      return counter.kind === 'usd' ? 0.5 : 400;
    });
    const counters = countersFor('t1', 'k1', undefined, { usd_per_month: 1 }, NOW);
    await assert.rejects(async () => ledger.reserve(counters, estimate(0.1), NOW), /database away/);
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => ledger.reserve(counters, estimate(0.1), NOW)));
    assert.equal(loads, 2, 'one failed load, then one for all ten calls');
    assert.equal(outcomes.filter((o) => o.ok).length, 5, 'half the budget was spent before');
  });

  test('a new window starts from its own figure; a call reserved in the old one settles there', async () => {
    const ledger = new MemoryLedger(async () => 0);
    const minute = (now: number) => countersFor('t1', 'k1', { requests_per_minute: 1 }, undefined, now);
    const first = await ledger.reserve(minute(NOW), estimate(0), NOW);
    assert.ok(first.ok);
    assert.equal((await ledger.reserve(minute(NOW), estimate(0), NOW)).ok, false);
    const next = NOW + 30_000;
    const second = await ledger.reserve(minute(next), estimate(0), next);
    assert.ok(second.ok);
    await first.reservation.settle(estimate(0));
    assert.deepEqual(await ledger.read(minute(next), next), [{ used: 0, reserved: 1 }]);
  });
});

describe('what a limited client is told', () => {
  const counter = (kind: CounterSpec['kind'], limit: number, scope: CounterSpec['scope'] = 'tenant') =>
    countersFor('t1', 'k1', scope === 'key' ? { [fieldOf(kind)]: limit } : undefined, scope === 'tenant' ? { [fieldOf(kind)]: limit } : undefined, NOW)[0]!;

  test('Retry-After: the end of the window, or 1 s when only calls in flight stand in the way', () => {
    const spent = limitExceeded(counter('usd', 1), { used: 0.95, reserved: 0 }, 0.1, NOW);
    assert.equal(spent.status, 429);
    assert.equal(spent.headers['retry-after'], String((Date.UTC(2026, 3, 1) - NOW) / 1000));
    assert.match(spent.message, /It resets at 2026-04-01T00:00:00.000Z\./);
    const held = limitExceeded(counter('usd', 1), { used: 0.2, reserved: 0.75 }, 0.1, NOW);
    assert.equal(held.headers['retry-after'], '1');
    assert.match(held.message, /Calls in flight hold the rest/);
    const requests = limitExceeded(counter('requests', 5, 'key'), { used: 3, reserved: 2 }, 1, NOW);
    assert.equal(requests.headers['retry-after'], '30', 'requests in flight are not given back');
    assert.equal(requests.headers['x-gateway-limit-exceeded'], 'key.requests_per_minute');
  });

  test('a request larger than the whole limit is told to lower max_tokens', () => {
    const problem = limitExceeded(counter('tokens', 1000, 'key'), { used: 0, reserved: 0 }, 4200, NOW);
    assert.equal(problem.code, 'token_limit_exceeded');
    assert.match(problem.message, /this API key allows 1,000 tokens per day \(UTC\); 0 tokens are used or reserved and this request may need up to 4,200 tokens\. This request alone is larger than the limit: lower max_tokens/);
  });

  test('x-ratelimit-*: per kind, the tighter of the key and the tenant; durations as OpenAI writes them', () => {
    const counters = countersFor('t1', 'k1', { requests_per_minute: 100, tokens_per_day: 5000 }, { requests_per_minute: 10 }, NOW);
    const headers = rateLimitHeaders(counters, [
      { used: 1, reserved: 1 },
      { used: 100, reserved: 107 },
      { used: 7, reserved: 1 },
    ], NOW);
    assert.deepEqual(headers, [
      'x-ratelimit-limit-requests',
      '10',
      'x-ratelimit-remaining-requests',
      '2',
      'x-ratelimit-reset-requests',
      '30s',
      'x-ratelimit-limit-tokens',
      '5000',
      'x-ratelimit-remaining-tokens',
      '4793',
      'x-ratelimit-reset-tokens',
      '11h59m30s',
    ]);
    assert.deepEqual([resetText(1), resetText(360_000), resetText(3_600_000 * 30 + 61_000)], ['1s', '6m0s', '30h1m1s']);
    // The same counters (the budgets stage keeps a key's), asked again later in their windows: the time left moves on.
    const later = rateLimitHeaders(counters, [
      { used: 2, reserved: 0 },
      { used: 100, reserved: 0 },
      { used: 8, reserved: 0 },
    ], NOW + 12_500);
    assert.deepEqual(later.filter((_, i) => i % 2 === 1), ['10', '2', '18s', '5000', '4900', '11h59m18s']);
  });
});

function fieldOf(kind: CounterSpec['kind']) {
  return kind === 'requests' ? 'requests_per_minute' : kind === 'tokens' ? 'tokens_per_day' : 'usd_per_month';
}
