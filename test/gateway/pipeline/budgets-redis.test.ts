import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import pino from 'pino';
import { countersFor } from '../../../src/gateway/budgets/ledger.ts';
import { MemoryLedger } from '../../../src/gateway/budgets/memory-ledger.ts';
import { RedisLedger } from '../../../src/gateway/budgets/redis-ledger.ts';
import type { ManualClock } from '../../../src/platform/clock.ts';
import { POSTGRES_URL, REDIS_URL } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, startReplica } from '../../helpers/gateway-service.ts';
import { ask, count, ESTIMATE_USD, MAX_TOKENS, newClock, PROMPT, SPENT_COMPLETION, SPENT_USD, until } from './budget-calls.ts';

/** Two gateway replicas sharing PostgreSQL, Redis and one clock; B is a second service with its own process state. */
async function replicas(t: { after: (fn: () => Promise<void>) => void }) {
  const clock = newClock();
  const a = await startLiveGateway('postgres', { REDIS_URL: REDIS_URL! }, { clock });
  t.after(() => a.close());
  const { url: bUrl } = await startReplica(a, { GATEWAY_USAGE_FLUSH_MS: '20', REDIS_URL: REDIS_URL! }, { clock });
  const viaB = (tenant: LiveTenant, key = tenant.apiKey) => new OpenAI({ baseURL: `${bUrl}/v1`, apiKey: key, maxRetries: 0 });
  const limitsViaB = async (tenant: LiveTenant) => {
    const res = await fetch(`${bUrl}/api/v1/tenant/limits`, { headers: { authorization: `Bearer ${tenant.session}` } });
    // biome-ignore lint/suspicious/noExplicitAny: inspected field by field
    return (await res.json()) as any;
  };
  return { a, viaB, limitsViaB, clock };
}

const patch = async (gw: LiveGateway, tenant: LiveTenant, path: string, body: unknown) => {
  const r = await gw.api(path, { method: 'PATCH', token: tenant.session, body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
};

describe('budgets shared by replicas through Redis', { skip: POSTGRES_URL && REDIS_URL ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL' }, () => {
  test('50 concurrent calls spread over two replicas: exactly 10 pass a USD budget of 10, and exactly 10 a limit of 10 requests per minute', async (t) => {
    const { a, viaB } = await replicas(t);
    a.fake.setBehaviour({ latencyMs: 300, promptTokens: PROMPT, completionTokens: MAX_TOKENS });

    const spender = await a.tenant({ providers: ['openai'] });
    await patch(a, spender, '/api/v1/tenant', { settings: { limits: { usd_per_month: ESTIMATE_USD * 10.5 } } });
    const [onA, onB] = [spender.openai, viaB(spender)];
    const usd = await Promise.all(Array.from({ length: 50 }, (_, i) => ask(i % 2 ? onA : onB)));
    assert.equal(count(usd, 200), 10);
    assert.equal(count(usd, 429), 40);
    assert.ok(usd.filter((o) => o.status === 429).every((o) => o.code === 'budget_exceeded' && Number(o.headers.get('retry-after')) >= 1));

    const caller = await a.tenant({ providers: ['openai'] });
    await patch(a, caller, `/api/v1/tenant/api-keys/${caller.apiKeyId}`, { limits: { requests_per_minute: 10 } });
    const [rA, rB] = [caller.openai, viaB(caller)];
    const rpm = await Promise.all(Array.from({ length: 50 }, (_, i) => ask(i % 2 ? rA : rB)));
    assert.equal(count(rpm, 200), 10);
    const refused = rpm.filter((o) => o.status === 429);
    assert.equal(refused.length, 40);
    assert.ok(refused.every((o) => o.headers.get('x-ratelimit-remaining-requests') === '0' && o.headers.get('retry-after') === '30'));
  });

  test("limits changed on one replica apply on the other from its next request (a key's and a tenant's)", async (t) => {
    const { a, viaB } = await replicas(t);
    const tenant = await a.tenant({ providers: ['openai'] });
    const b = viaB(tenant);
    // B has the key (without limits) and the tenant in its caches now.
    for (let i = 0; i < 3; i++) assert.equal((await ask(b)).status, 200);
    await patch(a, tenant, `/api/v1/tenant/api-keys/${tenant.apiKeyId}`, { limits: { requests_per_minute: 4 } });
    await until(async () => (await ask(b)).status === 429, 'replica B to apply the key limit');
    const refused = await ask(b);
    assert.match(refused.message!, /this API key allows 4 requests per minute/);

    await patch(a, tenant, `/api/v1/tenant/api-keys/${tenant.apiKeyId}`, { limits: null });
    await patch(a, tenant, '/api/v1/tenant', { settings: { limits: { requests_per_minute: 2 } } });
    await until(async () => {
      const r = await ask(b);
      return r.status === 429 && /your tenant/.test(r.message!);
    }, 'replica B to apply the tenant limit instead');
  });

  test('consumption is shared: calls made through A and B show on B, seeded from the usage records of calls made before the limit', async (t) => {
    const { a, viaB, limitsViaB } = await replicas(t);
    const tenant = await a.tenant({ providers: ['openai'] });
    a.fake.setBehaviour({ promptTokens: PROMPT, completionTokens: SPENT_COMPLETION });
    for (let i = 0; i < 2; i++) assert.equal((await ask(tenant.openai)).status, 200);
    await a.service.dataPlane.usage.flush();
    await patch(a, tenant, '/api/v1/tenant', { settings: { limits: { usd_per_month: 1 } } });
    assert.equal((await ask(viaB(tenant))).status, 200);
    assert.equal((await ask(tenant.openai)).status, 200);
    await until(async () => {
      const usd = (await limitsViaB(tenant)).tenant.usage.usd_per_month;
      return Math.abs(usd.used - 4 * SPENT_USD) < 1e-12 && usd.reserved === 0;
    }, 'the two seeded calls, the one through B and the one through A, settled');
  });

  test("a replica that died holding a reservation blocks the budget only until the reservation's TTL", async (t) => {
    const clock: ManualClock = newClock();
    const connect = () => new Redis(REDIS_URL!, { maxRetriesPerRequest: 1 });
    const [r1, r2] = [connect(), connect()];
    t.after(() => {
      r1.disconnect();
      r2.disconnect();
    });
    const log = pino({ level: 'silent' });
    const seed = async () => 0;
    const ledger = (redis: Redis) => new RedisLedger({ redis, insurance: new MemoryLedger(seed), seed, clock, log, reservationTtlMs: 60_000 });
    const [dead, alive] = [ledger(r1), ledger(r2)];
    const tenantId = `crash-${process.pid}-${Date.now()}`;
    const counters = () => countersFor(tenantId, 'key-1', undefined, { usd_per_month: 1, requests_per_minute: 1000 }, clock.now());
    const estimate = { requests: 1, tokens: 0, usd: 0.8 };
    const held = await dead.reserve(counters(), estimate, clock.now());
    assert.ok(held.ok);
    r1.disconnect(); // never settles
    const blocked = await alive.reserve(counters(), estimate, clock.now());
    assert.equal(blocked.ok, false);
    assert.deepEqual(await alive.read(counters(), clock.now()), [
      { used: 0, reserved: 1 },
      { used: 0, reserved: 0.8 },
    ]);
    clock.advance(61_000);
    const after = await alive.reserve(counters(), estimate, clock.now());
    assert.ok(after.ok, 'the dead reservation expired');
    await after.reservation.settle({ requests: 1, tokens: 0, usd: 0.5 });
    const [requests, usd] = await alive.read(counters(), clock.now());
    assert.deepEqual(usd, { used: 0.5, reserved: 0 });
    assert.equal(requests!.used, 1);
  });
});
