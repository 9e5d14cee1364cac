import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { freePort } from '../helpers/auth.ts';
import { startLiveGateway } from '../helpers/gateway-service.ts';

/** A Redis of this test's own (the machine's redis-server binary on a free port, nothing on disk), so that it can be killed. */
async function startRedis(port: number): Promise<ChildProcess> {
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: redis.stdout! }).on('line', (line) => {
      if (line.includes('Ready to accept connections')) resolve();
    });
    redis.once('exit', (code) => reject(new Error(`redis-server exited (${code})`)));
  });
  return redis;
}

/**
 * Issue 9, faults: Redis stopped, then started again, under a gateway that
 * uses it for the response cache, dedup, budgets and sticky routes. While
 * it is away every call is still answered, within its usual time: the
 * cache is a miss (a hit needs Redis), the limits are counted in process,
 * and each failure is logged; once it is back the gateway uses it again by
 * itself (a repeated request is a cache hit again), with no restart.
 */
test('Redis killed and restarted: calls go on without it (cache misses, limits in process, logged), and it is used again once back', { timeout: 60_000 }, async (t) => {
  const port = await freePort();
  let redis = await startRedis(port);
  t.after(() => {
    redis.kill('SIGKILL');
  });
  const gw = await startLiveGateway('sqlite', { REDIS_URL: `redis://127.0.0.1:${port}`, GATEWAY_CACHE_ENABLED: 'true' });
  t.after(() => gw.close());
  const tenant = await gw.tenant({ providers: ['openai'] });
  const limited = await gw.api('/api/v1/tenant', { method: 'PATCH', token: tenant.session, body: { settings: { limits: { requests_per_minute: 1000, usd_per_month: 100 } } } });
  assert.equal(limited.status, 200);
  const ask = async (content: string, stream = false) => {
    const started = performance.now();
    const params = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content }] };
    const { response } = stream
      ? await tenant.openai.chat.completions.create({ ...params, stream: true }).withResponse()
      : await tenant.openai.chat.completions.create(params).withResponse();
    if (stream) await response.text();
    return { status: response.status, cache: response.headers.get('x-gateway-cache'), ms: performance.now() - started, limit: response.headers.get('x-ratelimit-remaining-requests') };
  };

  assert.equal((await ask('before')).cache, 'miss');
  assert.equal((await ask('before')).cache, 'hit', 'answered from Redis');

  redis.kill('SIGKILL');
  await once(redis, 'exit');
  for (const [content, stream] of [['before', false], ['during', false], ['during', true], ['during 2', false]] as const) {
    const r = await ask(content, stream);
    assert.equal(r.status, 200, `${content} answered without Redis`);
    assert.ok(r.cache === 'miss', `${content}: a miss while Redis is away (got ${r.cache})`);
    assert.ok(r.ms < 3000, `${content}: answered in ${Math.round(r.ms)} ms, not held up by Redis`);
    assert.ok(r.limit !== null, 'the limits are still counted, in process');
  }
  assert.ok(gw.logs.some((l) => /redis/i.test(l) && /"level":40/.test(l)), 'the outage is logged (warn)');

  redis = await startRedis(port);
  let recovered = false;
  for (let i = 0; i < 50 && !recovered; i++) {
    await ask(`after ${i}`);
    recovered = (await ask(`after ${i}`)).cache === 'hit';
    if (!recovered) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(recovered, 'a repeated request is a cache hit again once Redis is back, with no restart');
});
