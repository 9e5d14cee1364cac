import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import { ManualClock } from '../../../src/platform/clock.ts';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { upstreamEventTooLarge } from '../../../src/gateway/providers/upstream-errors.ts';
import { CircuitBreakers, type CircuitKeys } from '../../../src/gateway/routing/circuit-breaker.ts';
import { circuitKeys } from '../../../src/gateway/routing/circuit-keys.ts';
import { localBug, requestNotSendable, requestNotTranslatable, upstreamResponseTooLarge } from '../../../src/gateway/routing/local-failure.ts';
import { planAfterFailure } from '../../../src/gateway/routing/retry.ts';
import { upstreamInvalid, upstreamTimeout, upstreamUnreachable } from '../../../src/gateway/openai-errors.ts';

/** The circuit breakers' logic on a fake clock: own circuits, the shared one's distinct-tenants rule, the bounds. */

const base = new URL('https://api.example.com/v1');
const keysOf = (tenant: string, url = base, apiKey = `key-${tenant}`): CircuitKeys => circuitKeys(tenant, 'openai', url, apiKey);

function breakers(options: { sharedTenants?: number; maxCircuits?: number } = {}) {
  const clock = new ManualClock();
  const events: string[] = [];
  const b = new CircuitBreakers({
    failures: 2,
    cooldownMs: 1000,
    sharedTenants: options.sharedTenants ?? 3,
    sharedWindowMs: 10_000,
    clock,
    maxCircuits: options.maxCircuits,
    onEvent: (_p, e, scope) => events.push(`${scope}:${e}`),
  });
  return { b, clock, events };
}

describe('circuit keys', () => {
  test("own: tenant, provider, full base URL and the key's hash (never the key); shared: provider and origin", () => {
    const k = circuitKeys('t1', 'openai', new URL('http://h:8000/bad/v1'), 'sk-secret-value');
    assert.equal(k.origin, 'openai http://h:8000');
    assert.ok(k.own.startsWith('t1 openai http://h:8000/bad/v1 '));
    assert.ok(!k.own.includes('sk-secret-value'));
    assert.notEqual(circuitKeys('t1', 'openai', new URL('http://h:8000/good/v1'), 'sk-secret-value').own, k.own, 'another path');
    assert.notEqual(circuitKeys('t1', 'openai', new URL('http://h:8000/bad/v1'), 'sk-other-value').own, k.own, 'another key');
    assert.notEqual(circuitKeys('t2', 'openai', new URL('http://h:8000/bad/v1'), 'sk-secret-value').own, k.own, 'another tenant');
  });
});

describe('circuit breakers (pure)', () => {
  test("a tenant's failures open its own circuit only", () => {
    const { b } = breakers();
    const a = keysOf('a');
    const other = keysOf('b');
    b.failure(a, 'origin');
    b.failure(a, 'origin');
    assert.equal(b.admit(a), false);
    assert.equal(b.admit(other), true);
    assert.equal(b.admit(keysOf('a', new URL('https://api.example.com/other/v1'))), true, "the same tenant's other base URL");
  });

  test("'own' failures never count on the shared circuit", () => {
    const { b } = breakers({ sharedTenants: 1 });
    b.failure(keysOf('a'), 'own');
    b.failure(keysOf('a'), 'own');
    assert.equal(b.admit(keysOf('b')), true);
  });

  test('the shared circuit: N distinct tenants and the failure count, no success in between; skips everyone; re-arms after the cooldown', () => {
    const { b, clock, events } = breakers();
    for (let i = 0; i < 5; i++) b.failure(keysOf('a'), 'origin');
    b.failure(keysOf('b'), 'origin');
    assert.equal(b.admit(keysOf('z')), true, 'two tenants, however many failures: closed');
    b.failure(keysOf('c'), 'origin');
    assert.equal(b.admit(keysOf('z')), false, 'the third distinct tenant opens it');
    assert.equal(b.retryInMs(keysOf('z')), 1000);
    assert.deepEqual(events.filter((e) => e.startsWith('shared')), ['shared:opened', 'shared:skipped']);
    clock.advance(1000);
    assert.equal(b.admit(keysOf('z')), true, 'after the cooldown it closes');
    b.failure(keysOf('d'), 'origin');
    assert.equal(b.admit(keysOf('z')), true, 'and must be opened again by N tenants, not by one failing probe');
  });

  test('any success on the origin starts the count again', () => {
    const { b } = breakers();
    b.failure(keysOf('a'), 'origin');
    b.failure(keysOf('b'), 'origin');
    b.success(keysOf('ok'));
    b.failure(keysOf('c'), 'origin');
    assert.equal(b.admit(keysOf('z')), true);
    b.failure(keysOf('d'), 'origin');
    b.failure(keysOf('e'), 'origin');
    assert.equal(b.admit(keysOf('z')), false);
  });

  test('failures further apart than the window do not add up', () => {
    const { b, clock } = breakers();
    b.failure(keysOf('a'), 'origin');
    b.failure(keysOf('b'), 'origin');
    clock.advance(10_001);
    b.failure(keysOf('c'), 'origin');
    assert.equal(b.admit(keysOf('z')), true);
  });

  test('bounded: at most maxCircuits of each kind, the oldest forgotten (closed) first', () => {
    const { b } = breakers({ maxCircuits: 3, sharedTenants: 1 });
    const first = keysOf('t0', new URL('https://h0.example/v1'));
    b.failure(first, 'origin');
    b.failure(first, 'origin');
    assert.equal(b.admit(first), false);
    for (let i = 1; i <= 3; i++) b.failure(keysOf(`t${i}`, new URL(`https://h${i}.example/v1`)), 'origin');
    assert.equal(b.admit(first), true, 'forgotten: fails open');
    let open = 0;
    for (const { count } of b.openCounts().values()) open += count;
    assert.ok(open <= 6);
  });

  test('distinct tenants remembered per origin are at most N', () => {
    const { b } = breakers({ sharedTenants: 2 });
    b.failure(keysOf('a'), 'origin');
    b.failure(keysOf('a'), 'origin');
    b.failure(keysOf('b'), 'origin');
    assert.equal(b.admit(keysOf('z')), false);
  });
});

describe('what a failure counts against', () => {
  test("failures on the gateway's side of the wire stop and count nowhere, whatever their status", () => {
    for (const p of [requestNotTranslatable('OpenAI', new RangeError('x')), requestNotSendable('OpenAI', new Error('x')), localBug(new TypeError('x')), upstreamResponseTooLarge(65536), upstreamEventTooLarge('OpenAI', 1024)]) {
      assert.deepEqual(planAfterFailure(p), { next: 'stop', counts: 'nowhere' }, p.code);
    }
  });

  test("connect errors, timeouts and 5xx are the origin's; an unreadable answer is the target's own; 4xx nowhere", () => {
    assert.equal(planAfterFailure(upstreamUnreachable('OpenAI', new Error('x'))).counts, 'origin');
    assert.equal(planAfterFailure(upstreamTimeout('OpenAI', new Error('x'))).counts, 'origin');
    assert.equal(planAfterFailure(new HttpProblem(502, 'upstream_error', 'x')).counts, 'origin');
    assert.equal(planAfterFailure(new HttpProblem(503, 'upstream_overloaded', 'x')).counts, 'origin');
    assert.equal(planAfterFailure(upstreamInvalid('OpenAI')).counts, 'own');
    for (const s of [400, 401, 403, 404, 408, 429, 499]) assert.equal(planAfterFailure(new HttpProblem(s, 'x', 'x')).counts, 'nowhere');
  });
});

describe('the shared circuit settings', () => {
  const load = (env: Record<string, string>) => loadGatewayConfig({ DATA_DIR: '/tmp', GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64), ...env });

  test('defaults: 3 tenants within 60 s; bad values refuse the start with a sentence naming the setting', () => {
    assert.equal(load({}).routing.breakerSharedTenants, 3);
    assert.equal(load({}).routing.breakerSharedWindowMs, 60_000);
    assert.equal(load({ GATEWAY_BREAKER_SHARED_TENANTS: '1' }).routing.breakerSharedTenants, 1);
    assert.throws(() => load({ GATEWAY_BREAKER_SHARED_TENANTS: '0' }), /GATEWAY_BREAKER_SHARED_TENANTS must be an integer from 1 to 100 \(got "0"\)/);
    assert.throws(() => load({ GATEWAY_BREAKER_SHARED_TENANTS: 'three' }), /GATEWAY_BREAKER_SHARED_TENANTS must be an integer/);
    assert.throws(() => load({ GATEWAY_BREAKER_SHARED_WINDOW_MS: '5' }), /GATEWAY_BREAKER_SHARED_WINDOW_MS must be an integer from 100/);
  });
});
