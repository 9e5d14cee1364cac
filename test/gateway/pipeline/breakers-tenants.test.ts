import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { metric } from './routing-fixture.ts';

/**
 * Circuit breakers that one tenant cannot open for another (issue 31,
 * defects 6 and 7), through the real gateway in front of the fake provider:
 * every tenant's OpenAI key points at the same fake origin, some under a base
 * path or with a key the fake fails for (setBehaviourFor). No retries, no
 * fallbacks: each call is one attempt, so the counts are exact. Two failures
 * open a circuit; the cooldown is long enough never to pass during a test.
 */

const MODEL = 'openai/gpt-4o-mini';
const MESSAGES = [{ role: 'user' as const, content: 'hello there' }];
const ENV = {
  GATEWAY_RETRIES: '0',
  GATEWAY_DEFAULT_FALLBACKS: '0',
  GATEWAY_BREAKER_FAILURES: '2',
  GATEWAY_BREAKER_COOLDOWN_MS: '600000',
  GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES: '65536',
};

let keys = 0;

/** A tenant whose only provider key is OpenAI's, with this key and base URL. */
async function tenantOn(gw: LiveGateway, options: { base: string; key?: string }): Promise<LiveTenant & { providerKey: string }> {
  const t = await gw.tenant({ providers: [] });
  const providerKey = options.key ?? `sk-breakers-${process.pid}-${++keys}`;
  const stored = await gw.api('/api/v1/tenant/provider-keys', { token: t.session, body: { provider: 'openai', key: providerKey, base_url: options.base } });
  assert.equal(stored.status, 201, JSON.stringify(stored.body));
  return { ...t, providerKey };
}

/** The call's status and error code (200 and undefined when it answered). */
async function call(t: LiveTenant): Promise<{ status: number; code: string | undefined }> {
  try {
    await t.openai.chat.completions.create({ model: MODEL, messages: MESSAGES });
    return { status: 200, code: undefined };
  } catch (err) {
    if (!(err instanceof OpenAI.APIError)) throw err;
    return { status: err.status ?? 0, code: (err as { code?: string }).code };
  }
}

/** A loopback port nothing listens on: calls to it fail to connect. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("one tenant's failures open only its own circuit", () => {
  let gw: LiveGateway;
  before(async () => {
    gw = await startLiveGateway('sqlite', ENV);
  });
  after(async () => {
    await gw.close();
  });
  beforeEach(() => gw.fake.reset());

  test("defect 7: A's base URL answering 500 opens A's circuit; B's healthy base URL on the same origin still answers", async () => {
    const a = await tenantOn(gw, { base: `${gw.fake.url}/bad/v1` });
    const b = await tenantOn(gw, { base: `${gw.fake.url}/good/v1` });
    gw.fake.setBehaviourFor({ path: '/bad' }, { fault: '500' });
    assert.deepEqual(await call(a), { status: 502, code: 'upstream_error' });
    assert.deepEqual(await call(a), { status: 502, code: 'upstream_error' });
    const reached = gw.fake.calls.count;
    assert.deepEqual(await call(a), { status: 503, code: 'upstream_circuit_open' }, "A's circuit is open");
    assert.equal(gw.fake.calls.count, reached, 'A skipped: no upstream call');
    assert.deepEqual(await call(b), { status: 200, code: undefined }, "B's call reaches the provider");
    assert.equal(gw.fake.calls.count, reached + 1);
    assert.equal(await metric(gw, 'gateway_circuits_open', { provider: 'openai', scope: 'tenant' }), 1);
    assert.equal(await metric(gw, 'gateway_circuits_open', { provider: 'openai', scope: 'shared' }), 0);
  });

  test("a failing provider key opens only its tenant's circuit; another key on the same base URL still answers", async () => {
    const a = await tenantOn(gw, { base: `${gw.fake.url}/v1` });
    const b = await tenantOn(gw, { base: `${gw.fake.url}/v1` });
    gw.fake.setBehaviourFor({ apiKey: a.providerKey }, { fault: '500' });
    assert.equal((await call(a)).status, 502);
    assert.equal((await call(a)).status, 502);
    assert.deepEqual(await call(a), { status: 503, code: 'upstream_circuit_open' });
    assert.deepEqual(await call(b), { status: 200, code: undefined });
  });
});

describe('the shared circuit of a provider origin', () => {
  let gw: LiveGateway;
  before(async () => {
    gw = await startLiveGateway('sqlite', { ...ENV, GATEWAY_BREAKER_SHARED_TENANTS: '3' });
  });
  after(async () => {
    await gw.close();
  });
  beforeEach(() => gw.fake.reset());

  test('connect errors from that many tenants open the circuit of the unreachable origin only', async () => {
    const down = `http://127.0.0.1:${await closedPort()}/v1`;
    const tenants = [];
    for (let i = 0; i < 3; i++) tenants.push(await tenantOn(gw, { base: down }));
    for (const t of tenants.slice(0, 2)) assert.deepEqual(await call(t), { status: 502, code: 'upstream_unreachable' });
    assert.deepEqual(await call(tenants[0]!), { status: 502, code: 'upstream_unreachable' }, 'two tenants: still tried');
    assert.deepEqual(await call(tenants[2]!), { status: 502, code: 'upstream_unreachable' }, 'the third tenant is still tried, and its failure opens it');
    const last = await tenantOn(gw, { base: down });
    assert.deepEqual(await call(last), { status: 503, code: 'upstream_circuit_open' }, 'a further tenant is skipped');
    assert.deepEqual(await call(await tenantOn(gw, { base: `${gw.fake.url}/v1` })), { status: 200, code: undefined }, 'another origin is untouched');
  });

  test('fewer than GATEWAY_BREAKER_SHARED_TENANTS failing tenants never open it; that many do, and then a further tenant is skipped', async () => {
    const opened = { provider: 'openai', event: 'opened', scope: 'shared' };
    const openedBefore = await metric(gw, 'gateway_circuit_events_total', opened);
    const openBefore = await metric(gw, 'gateway_circuits_open', { provider: 'openai', scope: 'shared' });
    gw.fake.setBehaviourFor({ path: '/down' }, { fault: '500' });
    const failing = [];
    for (let i = 0; i < 3; i++) failing.push(await tenantOn(gw, { base: `${gw.fake.url}/down/v1` }));
    const healthy = await tenantOn(gw, { base: `${gw.fake.url}/up/v1` });

    // Two tenants fail until their own circuits open, then are skipped: the origin's circuit stays closed for others.
    for (const t of failing.slice(0, 2)) {
      for (let i = 0; i < 4; i++) await call(t);
      assert.deepEqual(await call(t), { status: 503, code: 'upstream_circuit_open' });
    }
    assert.deepEqual(await call(healthy), { status: 200, code: undefined }, 'two tenants cannot open it');

    // Three distinct tenants whose calls fail, with no success on the origin in between: it opens.
    const fresh = [...failing.slice(2), await tenantOn(gw, { base: `${gw.fake.url}/down/v1` }), await tenantOn(gw, { base: `${gw.fake.url}/down/v1` })];
    for (const t of fresh) assert.deepEqual(await call(t), { status: 502, code: 'upstream_error' });
    const reached = gw.fake.calls.count;
    const skipped = await call(healthy);
    assert.deepEqual(skipped, { status: 503, code: 'upstream_circuit_open' }, 'a further tenant is skipped');
    assert.equal(gw.fake.calls.count, reached, 'no upstream call');
    assert.equal(await metric(gw, 'gateway_circuit_events_total', opened), openedBefore + 1);
    assert.equal(await metric(gw, 'gateway_circuits_open', { provider: 'openai', scope: 'shared' }), openBefore + 1);
  });
});

describe("failures on the gateway's side of the wire count nowhere (defect 6's class)", () => {
  let gw: LiveGateway;
  before(async () => {
    gw = await startLiveGateway('sqlite', ENV);
  });
  after(async () => {
    await gw.close();
  });
  beforeEach(() => gw.fake.reset());

  test('a request that cannot be sent (a stored key HTTP cannot carry): 400 request_not_sendable, never 502, and another tenant is unaffected', async () => {
    const a = await tenantOn(gw, { base: `${gw.fake.url}/v1`, key: 'sk-\u4e00\u4e00\u4e00\u4e00\u4e00\u4e00\u4e00\u4e00' });
    const b = await tenantOn(gw, { base: `${gw.fake.url}/v1` });
    for (let i = 0; i < 6; i++) {
      const failed = await call(a);
      assert.deepEqual(failed, { status: 400, code: 'request_not_sendable' }, 'neither retried nor skipped by a circuit');
    }
    assert.equal(gw.fake.calls.count, 0, 'nothing was sent');
    assert.deepEqual(await call(b), { status: 200, code: undefined });
    assert.equal(await metric(gw, 'gateway_circuit_events_total', { provider: 'openai', event: 'opened' }), 0);
  });

  test("an answer over the gateway's size limit: 502 upstream_response_too_large, not retried, counted nowhere", async () => {
    const a = await tenantOn(gw, { base: `${gw.fake.url}/v1` });
    const b = await tenantOn(gw, { base: `${gw.fake.url}/v1` });
    gw.fake.setBehaviourFor({ apiKey: a.providerKey }, { text: 'y'.repeat(100_000) });
    for (let i = 0; i < 4; i++) assert.deepEqual(await call(a), { status: 502, code: 'upstream_response_too_large' });
    assert.equal(gw.fake.calls.count, 4, 'each call reached the provider once: no retry, no circuit skipping');
    gw.fake.setBehaviourFor({ apiKey: a.providerKey }, undefined);
    assert.deepEqual(await call(a), { status: 200, code: undefined }, "A's own circuit never opened");
    assert.deepEqual(await call(b), { status: 200, code: undefined });
  });
});
