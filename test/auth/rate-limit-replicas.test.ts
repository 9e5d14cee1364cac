import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { PASSWORD, startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS, REDIS_URL } from '../helpers/env.ts';
import { slowProxy } from '../helpers/slow-proxy.ts';

/** An address in a documentation-range IPv6 /64 no earlier run has used (the service's Redis keys are fixed; buckets are per /64). */
const freshIp = () => `2001:db8:${randomBytes(6).toString('hex').match(/.{4}/g)!.join(':')}::1`;

/** A Redis client that is connected before the test uses it. */
async function connectedRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: false, lazyConnect: true });
  await redis.connect();
  return redis;
}

describe('register bucket shared by two account-service replicas', { skip: !REDIS_URL && 'TEST_REDIS_URL is not set' }, () => {
  const env = { REDIS_URL: REDIS_URL!, AUTH_LIMIT_REGISTER: '3/3600' };
  const signUp = (auth: TestAuth, ip: string) =>
    auth.request('POST', '/v1/register', { body: { email: uniqueEmail(), password: PASSWORD, ip } });
  let redis: Redis;
  before(async () => {
    redis = await connectedRedis(REDIS_URL!);
  });
  after(() => redis.disconnect());

  /** Waits until the replica's register bucket counts in Redis (its client has connected). */
  async function warmUp(auth: TestAuth): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const key = `warm-up:${randomUUID()}`;
      await auth.service.deps.limiters.register.consume(key);
      if (await redis.exists(`rl:auth:register:${key}`)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the replica never reached Redis');
  }

  test('three sign-ups from one IP spread over both replicas use the bucket up; the fourth gets 429 on either', async () => {
    const one = await startTestAuth(DB_KINDS[0]!, env);
    const two = await startTestAuth(DB_KINDS[0]!, env, one.smtp);
    try {
      await warmUp(one);
      await warmUp(two);
      const ip = freshIp();
      for (const auth of [one, two, one]) assert.equal((await signUp(auth, ip)).status, 201);
      for (const auth of [two, one]) {
        const r = await signUp(auth, ip);
        assert.equal(r.status, 429);
        assert.equal(r.body.code, 'rate_limited');
        const retry = Number(r.headers.get('retry-after'));
        assert.ok(retry > 3500 && retry <= 3600, `retry-after ${retry}`);
      }
      assert.equal((await signUp(two, freshIp())).status, 201, 'another IP has its own bucket');
      const metrics = await two.request('GET', '/metrics', { key: false });
      assert.match(metrics.text, /^auth_rate_limited_total\{bucket="register"\} 1$/m);
    } finally {
      await two.close();
      await one.close();
    }
  });

  // Once a bug: the service answered before its Redis client was ready, and with
  // enableOfflineQueue:false every command until then failed over to the per-process insurance
  // limiter, so freshly started replicas did not share the bucket (the runtime now waits for
  // Redis, bounded). Redis here is reached through a proxy that takes 1 s to connect.
  test('replicas share the bucket from their first request, not only once Redis has connected', async () => {
    const proxy = await slowProxy(REDIS_URL!, 1000);
    const slowEnv = { ...env, REDIS_URL: proxy.url };
    const one = await startTestAuth(DB_KINDS[0]!, slowEnv);
    const two = await startTestAuth(DB_KINDS[0]!, slowEnv, one.smtp);
    try {
      const ip = freshIp();
      const statuses = [];
      for (const auth of [one, two, one, two]) statuses.push((await signUp(auth, ip)).status);
      assert.deepEqual(statuses, [201, 201, 201, 429]);
    } finally {
      await two.close();
      await one.close();
      await proxy.close();
    }
  });
});
