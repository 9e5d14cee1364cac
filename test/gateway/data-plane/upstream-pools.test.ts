import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POOLS_TENANT_SHARE, UpstreamPools } from '../../../src/gateway/data-plane/upstream-pools.ts';
import { upstreamPolicy } from '../../../src/gateway/control-plane/upstream-policy.ts';
import { safeConnector } from '../../../src/platform/safe-connect.ts';

/**
 * Issue 31, "Also seen": the pool table (one pool per origin, the least
 * recently used closed past its bound) had no per-tenant share: one
 * tenant's many base URLs closed every other tenant's pools. A tenant now
 * has at most an eighth of the table, and past it closes its own least
 * recently used pool. Pools are made without connecting (no call is sent).
 */
test("one tenant's many base URLs close its own pools, never the pools other tenants made", async (t) => {
  const pools = new UpstreamPools({
    connectTimeoutMs: 1000,
    connections: 4,
    maxPools: 16,
    connector: (_origin, timeout) => safeConnector(upstreamPolicy({ kind: 'none' }), { connect: { timeout } }),
  });
  t.after(() => pools.close());
  const share = 16 * POOLS_TENANT_SHARE;
  const others = ['https://api.openai.com', 'https://api.anthropic.com', 'https://b.example'];
  for (const [i, origin] of others.entries()) pools.get(new URL(`${origin}/v1`), `tenant-${i}`);
  for (let i = 0; i < 100; i++) pools.get(new URL(`https://a${i}.example/v1`), 'attacker');
  for (const origin of others) assert.ok(pools.has(origin), `${origin} kept`);
  assert.equal(pools.size, others.length + share, 'the attacker holds its share of the table, no more');
  assert.ok(pools.has('https://a99.example') && pools.has('https://a98.example') && !pools.has('https://a97.example'), 'its newest pools');

  // Used by others, a pool the attacker made is its own least recently used only when nobody used it longer.
  pools.get(new URL('https://a98.example/v1'), 'tenant-0');
  pools.get(new URL('https://a100.example/v1'), 'attacker');
  assert.ok(pools.has('https://a98.example') && !pools.has('https://a99.example'));

  // The table full of tenants within their share: the least recently used pool of all goes.
  for (let i = 0; i < 20; i++) pools.get(new URL(`https://t${i}.example/v1`), `tenant-many-${i}`);
  assert.equal(pools.size, 16);
});
