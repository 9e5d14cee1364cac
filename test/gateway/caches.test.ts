import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import pino from 'pino';
import { LoadingCache } from '../../src/gateway/data-plane/loading-cache.ts';
import { type Invalidation, invalidationBus } from '../../src/gateway/invalidation.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { REDIS_URL } from '../helpers/env.ts';

const log = pino({ level: 'silent' });

describe('loading cache', () => {
  test('caches loaded values for the TTL, then loads again', async () => {
    const clock = new ManualClock();
    let loads = 0;
    const cache = new LoadingCache<string, string>({ clock, ttlMs: 1000, maxEntries: 10, load: async (k) => `${k}:${++loads}` });
    assert.equal(await cache.get('a'), 'a:1');
    assert.equal(cache.peek('a'), 'a:1');
    clock.advance(999);
    assert.equal(await cache.get('a'), 'a:1');
    clock.advance(1);
    assert.equal(cache.peek('a'), undefined);
    assert.equal(await cache.get('a'), 'a:2');
  });

  test('absent values are not cached (a key created a moment ago is found)', async () => {
    let exists = false;
    const cache = new LoadingCache<string, string>({ clock: new ManualClock(), ttlMs: 1000, maxEntries: 10, load: async () => (exists ? 'yes' : undefined) });
    assert.equal(await cache.get('k'), undefined);
    exists = true;
    assert.equal(await cache.get('k'), 'yes');
  });

  test('a load racing an invalidation is returned but not cached', async () => {
    let release!: (v: string) => void;
    const cache = new LoadingCache<string, string>({
      clock: new ManualClock(),
      ttlMs: 60_000,
      maxEntries: 10,
      load: () => new Promise<string>((resolve) => (release = resolve)),
    });
    const pending = cache.get('k');
    cache.invalidate('k');
    release('stale');
    assert.equal(await pending, 'stale');
    assert.equal(cache.peek('k'), undefined, 'the revoked value must not stay cached');
  });

  test('clear drops everything and keeps a racing load out', async () => {
    let release!: (v: string) => void;
    let loads = 0;
    const cache = new LoadingCache<string, string>({
      clock: new ManualClock(),
      ttlMs: 60_000,
      maxEntries: 10,
      load: (k) => (++loads === 1 ? Promise.resolve(k) : new Promise<string>((resolve) => (release = resolve))),
    });
    await cache.get('a');
    const pending = cache.get('b');
    cache.clear();
    release('b');
    await pending;
    assert.equal(cache.size, 0);
  });

  test('bounded: past maxEntries the oldest entry goes', async () => {
    const cache = new LoadingCache<string, string>({ clock: new ManualClock(), ttlMs: 60_000, maxEntries: 2, load: async (k) => k });
    await cache.get('a');
    await cache.get('b');
    await cache.get('c');
    assert.equal(cache.size, 2);
    assert.equal(cache.peek('a'), undefined);
    assert.equal(cache.peek('c'), 'c');
  });
});

describe('invalidation bus', () => {
  test('without Redis a message reaches this process at once', async () => {
    const bus = invalidationBus(undefined, log);
    const seen: Invalidation[] = [];
    bus.subscribe((m) => seen.push(m));
    await bus.publish({ kind: 'api-key', keyHash: 'h' });
    assert.deepEqual(seen, [{ kind: 'api-key', keyHash: 'h' }]);
  });

  test('with Redis a message published by one replica reaches another', { skip: REDIS_URL ? false : 'TEST_REDIS_URL not set' }, async (t) => {
    const a = new Redis(REDIS_URL!);
    const b = new Redis(REDIS_URL!);
    const busA = invalidationBus(a, log);
    const busB = invalidationBus(b, log);
    t.after(async () => {
      await busA.close();
      await busB.close();
      a.disconnect();
      b.disconnect();
    });
    const received = new Promise<Invalidation>((resolve) => busB.subscribe(resolve));
    const local: Invalidation[] = [];
    busA.subscribe((m) => local.push(m));
    // The subscriber connects asynchronously; publish until B hears (bounded).
    let got: Invalidation | undefined;
    for (let i = 0; i < 50 && !got; i++) {
      await busA.publish({ kind: 'tenant', tenantId: 't-1' });
      got = await Promise.race([received, new Promise<undefined>((r) => setTimeout(r, 50))]);
    }
    assert.deepEqual(got, { kind: 'tenant', tenantId: 't-1' });
    assert.ok(local.length >= 1, 'the publishing replica is told at once too');
  });
});

