import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Agent } from 'undici';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import { UpstreamShares } from '../../../src/gateway/data-plane/upstream-shares.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { until } from '../pipeline/cache-helpers.ts';

/**
 * Issue 31, defect 8 and the class "what tenants share is shared fairly":
 * one undici pool per provider origin, shared with no per-tenant share, let
 * tenant A's 130 slow calls hold every socket while tenant B's call to the
 * same origin got nothing for 25 s; and no tenant had a cap on its calls in
 * progress. Each tenant now has a share of an origin's connections
 * (GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT; its calls past it wait in its own
 * queue, at most until the first-byte timeout) and a cap on its calls in
 * progress per replica (GATEWAY_TENANT_CONCURRENCY; past it, 429 at once).
 * Only tenant A's upstream is slow (fake.setBehaviourFor on its provider
 * key), on the origin B's calls go to as well. No assertion is timed: B's
 * answer is compared with A's calls, which a 5 s upstream latency holds.
 */

const hello = (content = 'hi') => JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }] });

interface Pending {
  /** Resolves with the status and body (or the error), never rejects. */
  done: Promise<{ status: number; body: string; headers: Headers | undefined }>;
  settled: boolean;
  abort: () => void;
}

/**
 * The suite's own client connections, destroyed before the gateway closes:
 * a connection that carried a stream its client left stays open on the
 * gateway's side after the fetch is aborted, and would hold the gateway's
 * shutdown for the keep-alive timeout (72 s).
 */
let client = new Agent();

/** A call left running: whether it has settled can be read at any time, and its client can go away. */
function start(gw: LiveGateway, tenant: LiveTenant, body: string): Pending {
  const controller = new AbortController();
  const pending: Pending = {
    settled: false,
    abort: () => controller.abort(),
    done: fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.apiKey}` },
      body,
      signal: controller.signal,
      // @ts-expect-error undici's fetch option, not in the DOM's RequestInit
      dispatcher: client,
    })
      .then(async (res) => ({ status: res.status, body: await res.text(), headers: res.headers }))
      .catch((err: Error) => ({ status: 0, body: err.name, headers: undefined }))
      .finally(() => {
        pending.settled = true;
      }),
  };
  return pending;
}

const shareOf = (gw: LiveGateway, tenant: LiveTenant) => gw.service.dataPlane.shares.inFlight(UpstreamShares.key(tenant.tenantId, new URL(gw.fake.url).origin));
const inProgress = (gw: LiveGateway, tenant: LiveTenant) => gw.service.dataPlane.concurrency.inProgress(tenant.tenantId);
/** Calls the fake received with a tenant's provider key. */
const received = (gw: LiveGateway, tenant: LiveTenant) =>
  gw.fake.calls.recent.filter((c) => c.headers.authorization === `Bearer ${tenant.providerKeys['openai']}`).length;

/** Nothing of the tenant is counted any more: no call in progress, no connection share held or waited for. */
async function nothingHeld(gw: LiveGateway, tenant: LiveTenant): Promise<void> {
  await until(() => inProgress(gw, tenant) === 0 && shareOf(gw, tenant).active === 0 && shareOf(gw, tenant).waiting === 0, 'the counts to return to zero');
  assert.equal(gw.service.dataPlane.shares.size, 0, 'no entry left in the shares map');
  assert.equal(gw.service.dataPlane.concurrency.tenants, 0, 'no entry left in the concurrency map');
}

async function live(t: { after: (fn: () => Promise<void>) => void }, env: Record<string, string>) {
  const gw = await startLiveGateway('sqlite', { GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0', ...env });
  t.after(async () => {
    await client.destroy();
    client = new Agent();
    await gw.close();
  });
  const a = await gw.tenant({ providers: ['openai'] });
  const b = await gw.tenant({ providers: ['openai'] });
  return { gw, a, b };
}

describe('upstream connections per tenant per origin (defect 8)', () => {
  test("tenant A's slow calls fill its share; tenant B's call to the same origin answers at once; A's calls past its share wait in the gateway", async (t) => {
    // The pool of 4 connections would be all A's without a share (and B's call queued behind A's fifth).
    const { gw, a, b } = await live(t, { GATEWAY_UPSTREAM_CONNECTIONS: '4', GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT: '2' });
    gw.fake.setBehaviourFor({ apiKey: a.providerKeys['openai']! }, { latencyMs: 5000 });
    const slow = Array.from({ length: 6 }, (_, i) => start(gw, a, hello(`slow ${i}`)));
    await until(() => received(gw, a) >= 2 && shareOf(gw, a).waiting === 4, "A's share to be full and the rest of its calls waiting");

    const fast = start(gw, b, hello('quick'));
    const answer = await fast.done;
    assert.equal(answer.status, 200, answer.body);
    assert.ok(
      slow.every((p) => !p.settled),
      "B answered while every call of A was still held by A's 5 s upstream",
    );
    assert.equal(received(gw, a), 2, 'only the share of A reached the provider; the rest waits in the gateway, not in the pool');
    assert.deepEqual(shareOf(gw, a), { active: 2, waiting: 4 });

    // Clients going away leave the queue (and free the share) at once.
    for (const p of slow) p.abort();
    await Promise.all(slow.map((p) => p.done));
    await nothingHeld(gw, a);
    assert.equal(received(gw, a), 2, 'a waiting call whose client left never reached the provider');
  });

  test('a call past the share waits at most the first-byte timeout, then 429 upstream_concurrency_limited with Retry-After; the share returns to zero', async (t) => {
    const { gw, a } = await live(t, {
      GATEWAY_UPSTREAM_CONNECTIONS: '4',
      GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT: '2',
      GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '800',
    });
    // A's streams answer at once and then hold their connection: a delta every 300 ms, 40 of them (12 s).
    gw.fake.setBehaviourFor({ apiKey: a.providerKeys['openai']! }, { chunkDelayMs: 300, chunks: 40 });
    const streams = [0, 1].map((i) => start(gw, a, JSON.stringify({ ...JSON.parse(hello(`stream ${i}`)), stream: true })));
    await until(() => shareOf(gw, a).active === 2, "A's two streams to hold its share");

    const refused = await start(gw, a, hello('one more')).done;
    assert.equal(refused.status, 429, refused.body);
    const error = JSON.parse(refused.body).error;
    assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(error.code, 'upstream_concurrency_limited');
    assert.match(error.message, /connections to the OpenAI API/);
    assert.equal(refused.headers?.get('retry-after'), '1');
    assert.ok(
      streams.every((s) => !s.settled),
      'refused while both streams still held the share (they last 12 s)',
    );
    assert.equal(received(gw, a), 2, 'the refused call never reached the provider');

    for (const s of streams) s.abort();
    await Promise.all(streams.map((s) => s.done));
    await nothingHeld(gw, a);
  });

  test('a stream holds its part of the share until it ends, however it ends: done, left by its client, cut, an error event', async (t) => {
    const { gw, a } = await live(t, { GATEWAY_UPSTREAM_CONNECTIONS: '4', GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT: '2' });
    const key = a.providerKeys['openai']!;
    const streamed = (content: string) => JSON.stringify({ ...JSON.parse(hello(content)), stream: true });
    const endings: [string, Record<string, unknown>, boolean][] = [
      ['done', { chunkDelayMs: 20, chunks: 5 }, false],
      ['left by its client', { chunkDelayMs: 200, chunks: 50 }, true],
      ['cut by the upstream', { chunkDelayMs: 20, chunks: 10, fault: 'drop', faultAfterChunks: 3 }, false],
      ['an error event', { chunkDelayMs: 20, chunks: 10, fault: 'stream-error', faultAfterChunks: 3 }, false],
    ];
    for (const [how, behaviour, leave] of endings) {
      gw.fake.setBehaviourFor({ apiKey: key }, behaviour);
      const calls = [0, 1, 2].map((i) => start(gw, a, streamed(`${how} ${i}`)));
      await until(() => shareOf(gw, a).active === 2 || calls.some((c) => c.settled), `two streams to hold the share (${how})`);
      if (leave) {
        for (const c of calls) c.abort();
      }
      await Promise.all(calls.map((c) => c.done));
      await nothingHeld(gw, a);
    }
  });
});

describe('calls in progress per tenant per replica', () => {
  test('past the cap, 429 concurrency_limited at once with Retry-After: 1; another tenant unaffected; the count returns to zero', async (t) => {
    const { gw, a, b } = await live(t, { GATEWAY_TENANT_CONCURRENCY: '3' });
    gw.fake.setBehaviourFor({ apiKey: a.providerKeys['openai']! }, { latencyMs: 5000 });
    const held = [0, 1, 2].map((i) => start(gw, a, hello(`held ${i}`)));
    await until(() => received(gw, a) === 3, "A's three calls to reach the provider");

    const refused = await start(gw, a, hello('a fourth')).done;
    assert.equal(refused.status, 429, refused.body);
    const error = JSON.parse(refused.body).error;
    assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(error.code, 'concurrency_limited');
    assert.match(error.message, /3 calls in progress/);
    assert.equal(refused.headers?.get('retry-after'), '1');
    assert.ok(held.every((p) => !p.settled), "refused while A's three calls were still held");
    assert.equal(received(gw, a), 3, 'the refused call reached no provider');

    const other = await start(gw, b, hello('B is not counted with A')).done;
    assert.equal(other.status, 200, other.body);
    assert.ok(held.every((p) => !p.settled));

    for (const p of held) p.abort();
    await Promise.all(held.map((p) => p.done));
    await nothingHeld(gw, a);
    const again = await start(gw, b, hello('and A may call again')).done;
    assert.equal(again.status, 200);
  });

  test('streams count until they end, and aborted streams release their place', async (t) => {
    const { gw, a } = await live(t, { GATEWAY_TENANT_CONCURRENCY: '2', GATEWAY_CACHE_ENABLED: 'true' });
    gw.fake.setBehaviourFor({ apiKey: a.providerKeys['openai']! }, { chunkDelayMs: 200, chunks: 50 });
    const streamed = (content: string) => JSON.stringify({ ...JSON.parse(hello(content)), stream: true });
    const streams = [0, 1].map((i) => start(gw, a, streamed(`long ${i}`)));
    await until(() => inProgress(gw, a) === 2 && received(gw, a) === 2, 'two streams in progress');
    const refused = await start(gw, a, streamed('a third')).done;
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.body).error.code, 'concurrency_limited');
    for (const s of streams) s.abort();
    await Promise.all(streams.map((s) => s.done));
    await nothingHeld(gw, a);

    gw.fake.setBehaviourFor({ apiKey: a.providerKeys['openai']! }, { chunkDelayMs: 5, chunks: 5 });
    const finished = await Promise.all([0, 1].map((i) => start(gw, a, streamed(`short ${i}`)).done));
    assert.deepEqual(
      finished.map((f) => f.status),
      [200, 200],
    );
    await nothingHeld(gw, a);
    // A cache hit counts while it is answered too, and is let go after.
    const hit = await start(gw, a, streamed('short 0')).done;
    assert.equal(hit.headers?.get('x-gateway-cache'), 'hit');
    await nothingHeld(gw, a);
  });
});

describe('share settings', () => {
  const env = { DATA_DIR: '/tmp/gateway-shares-config', GATEWAY_ENCRYPTION_KEY: 'c'.repeat(64) };
  test('defaults: 32 connections per tenant per origin of 128, 64 calls in progress, 25 % of the cache, 25,000 of 100,000 sessions', () => {
    const config = loadGatewayConfig(env);
    assert.equal(config.upstream.connectionsPerTenant, 32);
    assert.equal(config.tenantConcurrency, 64);
    assert.equal(config.cache.tenantSharePercent, 25);
    assert.deepEqual([config.routing.stickySessionsPerTenant, config.routing.stickySessions], [25_000, 100_000]);
  });

  test('a share larger than its whole is refused at start; a whole set lower takes the share down with it', () => {
    assert.throws(
      () => loadGatewayConfig({ ...env, GATEWAY_UPSTREAM_CONNECTIONS: '16', GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT: '17' }),
      /GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT \(17\) must be at most GATEWAY_UPSTREAM_CONNECTIONS \(16\)/,
    );
    assert.throws(
      () => loadGatewayConfig({ ...env, GATEWAY_STICKY_SESSIONS: '10', GATEWAY_STICKY_SESSIONS_PER_TENANT: '11' }),
      /GATEWAY_STICKY_SESSIONS_PER_TENANT \(11\) must be at most GATEWAY_STICKY_SESSIONS \(10\)/,
    );
    assert.throws(() => loadGatewayConfig({ ...env, GATEWAY_TENANT_CONCURRENCY: '0' }), /GATEWAY_TENANT_CONCURRENCY must be an integer from 1/);
    assert.throws(() => loadGatewayConfig({ ...env, GATEWAY_CACHE_TENANT_SHARE_PERCENT: '101' }), /GATEWAY_CACHE_TENANT_SHARE_PERCENT must be an integer from 1 to 100/);
    const lowered = loadGatewayConfig({ ...env, GATEWAY_UPSTREAM_CONNECTIONS: '16', GATEWAY_STICKY_SESSIONS: '1000' });
    assert.deepEqual([lowered.upstream.connectionsPerTenant, lowered.routing.stickySessionsPerTenant], [16, 1000]);
  });
});
