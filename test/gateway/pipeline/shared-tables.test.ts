import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startLiveGateway } from '../../helpers/gateway-service.ts';

/**
 * Issue 31, "Also seen": the in-process tables every tenant shares (the
 * sticky-route table, the memory cache) had no per-tenant share, so one
 * tenant's many sessions or answers pushed every other tenant's out. Each
 * tenant now has a share (GATEWAY_STICKY_SESSIONS_PER_TENANT,
 * GATEWAY_CACHE_TENANT_SHARE_PERCENT); a tenant at its share replaces its
 * own oldest entries, never another tenant's. Through the real app, with
 * small tables so that the test is quick.
 */

const EASY = [{ role: 'user' as const, content: 'What is the capital of Australia?' }];
const HARD = [
  {
    role: 'user' as const,
    content: 'Why does this deadlock under load? Fix it and explain the race.\n```go\nfunc (c *Cache) Get(k string) string {\n  c.mu.RLock()\n  c.mu.Lock()\n}\n```',
  },
];

describe('shares of the tables tenants share', () => {
  test("sticky routes: one tenant's many sessions do not push another tenant's session off its model", async (t) => {
    const gw = await startLiveGateway('sqlite', { GATEWAY_STICKY_SESSIONS: '8', GATEWAY_STICKY_SESSIONS_PER_TENANT: '2' });
    t.after(() => gw.close());
    const a = await gw.tenant({ providers: ['openai'] });
    const b = await gw.tenant({ providers: ['openai'] });
    const ask = (tenant: typeof a, messages: typeof EASY, session: string) =>
      tenant.openai.chat.completions.create({ model: 'auto', messages }, { headers: { 'X-Gateway-Session-Id': session } }).withResponse();

    const raised = (await ask(b, HARD, 'b-conversation')).response.headers.get('x-gateway-model')!;
    assert.notEqual(raised, 'openai/gpt-5-nano', 'a hard turn raises the session above the lightest tier');
    for (let i = 0; i < 20; i++) await ask(a, EASY, `a-conversation-${i}`);

    const later = await ask(b, EASY, 'b-conversation');
    assert.equal(later.response.headers.get('x-gateway-model'), raised, "B's easy turn stays on its session's model");
    assert.match(later.response.headers.get('x-gateway-route-reason')!, /^sticky session tier=[23]$/);
    // A's newest sessions are held, its oldest replaced by them.
    assert.match((await ask(a, HARD, 'a-conversation-19')).response.headers.get('x-gateway-route-reason')!, /session tier raised from 1$/);
    assert.doesNotMatch((await ask(a, HARD, 'a-conversation-0')).response.headers.get('x-gateway-route-reason')!, /raised from/);
  });

  test("memory cache: one tenant filling the cache does not evict another tenant's entry", async (t) => {
    // 64 KiB of cache, a quarter of it each tenant's; A's answers are about 2 KiB each, a hundred of them three times the ring.
    const gw = await startLiveGateway('sqlite', {
      GATEWAY_CACHE_ENABLED: 'true',
      GATEWAY_CACHE_MAX_BYTES: String(64 * 1024),
      GATEWAY_CACHE_MAX_ENTRY_BYTES: String(8 * 1024),
      GATEWAY_CACHE_TENANT_SHARE_PERCENT: '25',
    });
    t.after(() => gw.close());
    const a = await gw.tenant({ providers: ['openai'] });
    const b = await gw.tenant({ providers: ['openai'] });
    gw.fake.setBehaviourFor({ apiKey: a.providerKeys['openai']! }, { text: 'filler '.repeat(250) });
    const ask = (tenant: typeof a, content: string) =>
      tenant.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], temperature: 0 }).withResponse();

    assert.equal((await ask(b, 'what B asked')).response.headers.get('x-gateway-cache'), 'miss');
    for (let i = 0; i < 100; i++) assert.equal((await ask(a, `A's question ${i}`)).response.headers.get('x-gateway-cache'), 'miss');
    const store = gw.service.dataPlane.cacheStore;
    assert.ok(store !== undefined && store.tenantBytes(a.tenantId) <= 16 * 1024, 'A holds at most its quarter');

    const again = await ask(b, 'what B asked');
    assert.equal(again.response.headers.get('x-gateway-cache'), 'hit', "B's answer is still in the cache");
    assert.equal((await ask(a, "A's question 99")).response.headers.get('x-gateway-cache'), 'hit', "A's newest answers are kept");
    assert.equal((await ask(a, "A's question 0")).response.headers.get('x-gateway-cache'), 'miss', "A's oldest made room");
  });
});
