import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { bucketKey, createRateLimiter, type LimitResult } from '../../src/platform/limits.ts';
import { REDIS_URL } from '../helpers/env.ts';

function refused(r: LimitResult): number {
  assert.equal(r.allowed, false, 'expected the bucket to refuse');
  return (r as { retryAfterMs: number }).retryAfterMs;
}

/** A Redis client that is connected before the test uses it. */
async function connectedRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: false, lazyConnect: true });
  await redis.connect();
  return redis;
}

describe('createRateLimiter in memory', () => {
  test('allows `points` per key, then refuses with the time left in the window', async () => {
    const limiter = createRateLimiter(`test:${randomUUID()}`, { points: 3, durationSeconds: 60 });
    for (let i = 0; i < 3; i++) assert.deepEqual(await limiter.consume('203.0.113.1'), { allowed: true });
    const wait = refused(await limiter.consume('203.0.113.1'));
    assert.ok(wait > 59_000 && wait <= 60_000, `retryAfterMs ${wait}`);
    refused(await limiter.consume('203.0.113.1'));
    assert.deepEqual(await limiter.consume('203.0.113.2'), { allowed: true }, 'other keys have their own count');
  });

  test('the window ends: after durationSeconds the key is allowed again', async () => {
    const limiter = createRateLimiter(`test:${randomUUID()}`, { points: 1, durationSeconds: 1 });
    assert.equal((await limiter.consume('k')).allowed, true);
    const wait = refused(await limiter.consume('k'));
    await new Promise((r) => setTimeout(r, wait + 50));
    assert.equal((await limiter.consume('k')).allowed, true);
  });

  test('IPv6 addresses count per /64; an IPv4-mapped address counts as its IPv4 address', async () => {
    const limiter = createRateLimiter(`test:${randomUUID()}`, { points: 2, durationSeconds: 60 });
    assert.equal((await limiter.consume('2001:db8:5:6::1')).allowed, true);
    assert.equal((await limiter.consume('2001:DB8:5:6:aaaa:bbbb:cccc:dddd')).allowed, true);
    refused(await limiter.consume('2001:db8:5:6:0:0:0:2'));
    assert.equal((await limiter.consume('2001:db8:5:7::1')).allowed, true, 'another /64 has its own count');
    assert.equal((await limiter.consume('203.0.113.5')).allowed, true);
    assert.equal((await limiter.consume('::ffff:203.0.113.5')).allowed, true);
    refused(await limiter.consume('::ffff:cb00:7105'));
    assert.equal((await limiter.consume('203.0.113.6')).allowed, true, 'IPv4 addresses are not grouped');

    assert.equal(bucketKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(bucketKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(bucketKey('2001:db8:a:b:c:d:1.2.3.4'), '2001:db8:a:b::/64');
    assert.equal(bucketKey('user@example.com'), 'user@example.com', 'keys that are no address are unchanged');
  });

  test('two in-memory limiters of one name do not share a count (one process each)', async () => {
    const name = `test:${randomUUID()}`;
    const one = createRateLimiter(name, { points: 1, durationSeconds: 60 });
    const two = createRateLimiter(name, { points: 1, durationSeconds: 60 });
    assert.equal((await one.consume('k')).allowed, true);
    assert.equal((await two.consume('k')).allowed, true);
  });
});

describe('createRateLimiter on Redis', { skip: !REDIS_URL && 'TEST_REDIS_URL is not set' }, () => {
  const url = REDIS_URL!;
  let clients: Redis[] = [];
  before(async () => {
    clients = [await connectedRedis(url), await connectedRedis(url)];
  });
  after(() => {
    for (const c of clients) c.disconnect();
  });

  test('two replicas (separate clients) share one count per key', async () => {
    const name = `test:${randomUUID()}`;
    const [one, two] = clients.map((c) => createRateLimiter(name, { points: 4, durationSeconds: 120 }, c));
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await (i % 2 ? two! : one!).consume('198.51.100.7'));
    assert.ok(results.every((r) => r.allowed));
    for (const limiter of [one!, two!]) {
      const wait = refused(await limiter.consume('198.51.100.7'));
      assert.ok(wait > 110_000 && wait <= 120_000, `retryAfterMs ${wait}`);
    }
    assert.equal((await two!.consume('198.51.100.8')).allowed, true);
    assert.equal(Number(await clients[0]!.get(`rl:${name}:198.51.100.7`)), 6, 'the count lives in Redis');
  });

  test('concurrent requests on both replicas never admit more than `points`', async () => {
    const name = `test:${randomUUID()}`;
    const [one, two] = clients.map((c) => createRateLimiter(name, { points: 5, durationSeconds: 60 }, c));
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? two! : one!).consume('k')));
    assert.equal(results.filter((r) => r.allowed).length, 5);
  });

  test('with Redis unreachable the bucket still limits, per process, instead of failing', async () => {
    const down = new Redis('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    down.on('error', () => {});
    try {
      const limiter = createRateLimiter(`test:${randomUUID()}`, { points: 2, durationSeconds: 60 }, down);
      assert.equal((await limiter.consume('k')).allowed, true);
      assert.equal((await limiter.consume('k')).allowed, true);
      refused(await limiter.consume('k'));
    } finally {
      down.disconnect();
    }
  });
});
