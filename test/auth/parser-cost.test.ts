import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { startOAuth } from '../helpers/oauth.ts';
import { assertErrorPage, assertOAuthError, FORM, RawOAuth } from '../helpers/oauth-raw.ts';

/**
 * Defect 1: a body that costs the parser super-linear work stalls the whole
 * service. Every parser reachable without credentials must cost about what a
 * normal body of the same size costs. Times are compared as ratios measured
 * in the same run (never absolute), with a generous margin for a busy machine.
 */
const SIZE = 64 * 1024 - 256; // under AUTH_BODY_LIMIT_BYTES (64 KB), so the parser, not the limit, meets it
const MAX_RATIO = 20;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/**
 * The fastest of `runs` timings of a hostile request: a super-linear parser
 * is slow every time, while a machine busy with other work slows a run only
 * now and then (one run read 38 ms against 1.1 ms while other suites loaded
 * this machine; alone, 4.0 against 1.0).
 */
async function fastest<T>(fn: () => Promise<T>, runs = 3): Promise<{ ms: number; value: T }> {
  let best = await timed(fn);
  for (let i = 1; i < runs; i++) {
    const next = await timed(fn);
    if (next.ms < best.ms) best = next;
  }
  return best;
}

async function median(fn: () => Promise<unknown>, runs = 5): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push((await timed(fn)).ms);
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

/** `a&a&a...` of about `size` characters: thousands of repetitions of one key. */
const repeatedKeys = (size: number) => 'a&'.repeat(size / 2).slice(0, -1);

describe('no body or query costs super-linear work (defect 1)', () => {
  let auth: TestAuth;
  let raw: RawOAuth;
  before(async () => {
    auth = await startOAuth('sqlite');
    raw = new RawOAuth(auth);
  });
  after(() => auth.close());

  const post = (path: string, body: string) =>
    auth.request('POST', path, { key: false, rawBody: body, headers: { 'content-type': FORM } });

  for (const path of ['/verify', '/oauth/token']) {
    test(`64 KB of a&a&a... to POST ${path} costs a small multiple of a normal 64 KB form, and /healthz answers meanwhile`, async (t) => {
      const normal = `token=${'x'.repeat(SIZE)}`;
      await post(path, normal); // warm up the route
      const baseline = await median(() => post(path, normal));

      const attack = repeatedKeys(SIZE);
      const pair = () =>
        Promise.all([
          timed(() => post(path, attack)),
          // Sent while the hostile body is being handled: it must not wait for it.
          new Promise((r) => setImmediate(r)).then(() => timed(() => auth.request('GET', '/healthz', { key: false }))),
        ]);
      let [hostile, health] = await pair();
      for (let i = 1; i < 3; i++) {
        const [h, k] = await pair();
        if (h.ms < hostile.ms) hostile = h;
        if (k.ms < health.ms) health = k;
      }
      const ratio = hostile.ms / baseline;
      t.diagnostic(`hostile ${hostile.ms.toFixed(1)} ms, normal ${baseline.toFixed(1)} ms, /healthz ${health.ms.toFixed(1)} ms`);
      assert.ok(ratio < MAX_RATIO, `hostile body took ${hostile.ms.toFixed(1)} ms, ${ratio.toFixed(1)}x a normal one (${baseline.toFixed(1)} ms)`);
      assert.equal(health.value.status, 200);
      assert.ok(health.ms / baseline < MAX_RATIO, `/healthz waited ${health.ms.toFixed(1)} ms beside it`);

      // Refused with a clear 400 in the surface's own shape.
      if (path === '/verify') {
        assertErrorPage(hostile.value, 400);
        assert.match(hostile.value.text, /more than 100 fields/);
      } else {
        assertOAuthError(hostile.value, 400, 'invalid_request');
        assert.match(hostile.value.body.error_description, /more than 100 fields/);
      }
    });
  }

  test('a form of 100 fields is still parsed; 101 is refused', async () => {
    const fields = (n: number) => [['grant_type', 'refresh_token'], ...Array.from({ length: n - 1 }, (_, i) => [`x${i}`, 'y'])];
    const ok = await raw.token(fields(100) as [string, string][]);
    assertOAuthError(ok, 401, 'invalid_client');
    const over = await raw.token(fields(101) as [string, string][]);
    assertOAuthError(over, 400, 'invalid_request');
  });

  test('GET /oauth/authorize with thousands of repeated query keys costs a small multiple of a normal long query', async (t) => {
    // The request line is bounded by Node's header limit (16 KB), so about 14 KB of query.
    const size = 14 * 1024;
    const get = (query: string) => auth.request('GET', `/oauth/authorize?${query}`, { key: false });
    const normal = `state=${'x'.repeat(size)}`;
    await get(normal);
    const baseline = await median(() => get(normal));
    const hostile = await fastest(() => get(repeatedKeys(size)));
    t.diagnostic(`repeated keys ${hostile.ms.toFixed(1)} ms, normal ${baseline.toFixed(1)} ms`);
    assertErrorPage(hostile.value, 400);
    assert.ok(hostile.ms / baseline < MAX_RATIO, `repeated keys took ${hostile.ms.toFixed(1)} ms against ${baseline.toFixed(1)} ms`);
  });

  test('JSON bodies to POST /oauth/register (wide arrays, deep nesting) cost a small multiple of a normal 64 KB body', async (t) => {
    const register = (body: string) =>
      auth.request('POST', '/oauth/register', { key: false, rawBody: body, headers: { 'content-type': 'application/json' } });
    const normal = JSON.stringify({ redirect_uris: ['http://127.0.0.1/cb'], client_name: 'x', padding: 'x'.repeat(SIZE) });
    await register(normal);
    const baseline = await median(() => register(normal));
    const hostileBodies = {
      'wide redirect_uris': `{"redirect_uris":[${'"a",'.repeat(SIZE / 4 - 10)}"a"]}`,
      'wide grant_types': `{"redirect_uris":["http://127.0.0.1/cb"],"grant_types":[${'"a",'.repeat(SIZE / 4 - 20)}"a"]}`,
      'deep nesting': `{"redirect_uris":${'['.repeat(SIZE / 2 - 20)}${']'.repeat(SIZE / 2 - 20)}}`,
      'many keys': `{${Array.from({ length: SIZE / 12 }, (_, i) => `"k${i}":0`).join(',')}}`,
    };
    for (const [name, body] of Object.entries(hostileBodies)) {
      assert.ok(body.length <= 64 * 1024, `${name} fits the body limit`);
      const hostile = await fastest(() => register(body));
      t.diagnostic(`${name} ${hostile.ms.toFixed(1)} ms, normal ${baseline.toFixed(1)} ms`);
      assert.ok(hostile.value.status >= 400 && hostile.value.status < 500, `${name}: ${hostile.value.status} ${hostile.value.text.slice(0, 200)}`);
      assert.ok(hostile.ms / baseline < MAX_RATIO, `${name} took ${hostile.ms.toFixed(1)} ms against ${baseline.toFixed(1)} ms`);
    }
  });

  test('a long Basic authorization header costs a small multiple of a normal request', async (t) => {
    const basic = (value: string) => raw.token({ grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: `Basic ${value}` });
    const normal = Buffer.from(`${'x'.repeat(6000)}:${'y'.repeat(6000)}`).toString('base64');
    await basic(normal);
    const baseline = await median(() => basic(normal));
    const hostile = await fastest(() => basic(Buffer.from(`${'%41'.repeat(2000)}:${'%'.repeat(6000)}`).toString('base64')));
    t.diagnostic(`Basic ${hostile.ms.toFixed(1)} ms, normal ${baseline.toFixed(1)} ms`);
    assertOAuthError(hostile.value, 401, 'invalid_client');
    assert.ok(hostile.ms / baseline < MAX_RATIO, `Basic took ${hostile.ms.toFixed(1)} ms against ${baseline.toFixed(1)} ms`);
  });
});
