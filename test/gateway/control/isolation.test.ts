import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadProviderKeys } from '../../../src/gateway/control-plane/provider-keys.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

for (const kind of DB_KINDS) {
  describe(`tenant isolation (${kind})`, () => {
    let gw: TestGateway;
    let a: Awaited<ReturnType<TestGateway['signup']>>;
    let b: Awaited<ReturnType<TestGateway['signup']>>;
    before(async () => {
      gw = await startTestGateway(kind);
      a = await gw.signup();
      b = await gw.signup();
      await gw.request('POST', '/api/v1/tenant/provider-keys', { token: a.session, body: { provider: 'openai', key: 'sk-tenant-a-secret' } });
      await gw.insertUsage({ tenant_id: a.tenantId, key_id: a.apiKeyId, request_id: 'a-req', created_at: gw.clock.now() - 1000, tag: 'shared-tag', cost_usd: 3, request_body: 'A private prompt' });
    });
    after(() => gw.close());

    test("B reads nothing of A's: keys, provider keys, usage, requests", async () => {
      const keys = await gw.request('GET', '/api/v1/tenant/api-keys', { token: b.session });
      assert.deepEqual(keys.body.api_keys.map((k: { id: string }) => k.id), [b.apiKeyId]);
      assert.deepEqual((await gw.request('GET', '/api/v1/tenant/provider-keys', { token: b.session })).body.provider_keys, []);
      const usage = await gw.request('GET', '/api/v1/tenant/usage?tag=shared-tag&group_by=key', { token: b.session });
      assert.equal(usage.body.totals.requests, 0);
      assert.deepEqual(usage.body.groups, []);
      assert.equal((await gw.request('GET', `/api/v1/tenant/usage?key_id=${a.apiKeyId}`, { token: b.session })).body.totals.cost_usd, 0);
      assert.deepEqual((await gw.request('GET', '/api/v1/tenant/requests', { token: b.session })).body.requests, []);
      const one = await gw.request('GET', '/api/v1/tenant/requests/a-req', { token: b.session });
      assert.equal(one.status, 404);
      assert.ok(!one.text.includes('private prompt'));
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: b.session })).body.id, b.tenantId);
      assert.equal((await loadProviderKeys(gw.deps.db, [gw.deps.config.encryptionKey], b.tenantId)).size, 0);
    });

    test("B deletes nothing of A's, and A's keys still work", async () => {
      gw.revoked.length = 0;
      const revoke = await gw.request('DELETE', `/api/v1/tenant/api-keys/${a.apiKeyId}`, { token: b.session });
      assert.equal(revoke.status, 404, 'the same answer as for a key that does not exist');
      assert.deepEqual(gw.revoked, [], 'no cache was told to drop it');
      assert.equal((await gw.request('DELETE', '/api/v1/tenant/provider-keys/openai', { token: b.session })).status, 204, 'idempotent: B has no such key');
      const aKeys = await gw.request('GET', '/api/v1/tenant/api-keys', { token: a.session });
      assert.deepEqual(aKeys.body.api_keys.map((k: { id: string }) => k.id), [a.apiKeyId]);
      const aProviders = await loadProviderKeys(gw.deps.db, [gw.deps.config.encryptionKey], a.tenantId);
      assert.equal(aProviders.get('openai')?.apiKey, 'sk-tenant-a-secret');
      assert.equal((await gw.request('GET', '/api/v1/tenant/requests/a-req', { token: a.session })).body.request_body, 'A private prompt');
    });

    test("B's cursor cannot page into A's log", async () => {
      const aPage = await gw.request('GET', '/api/v1/tenant/requests?limit=1', { token: a.session });
      assert.equal(aPage.body.requests.length, 1);
      const cursor = Buffer.from(`${gw.clock.now()}.zzz`).toString('base64url');
      const bPage = await gw.request('GET', `/api/v1/tenant/requests?cursor=${cursor}`, { token: b.session });
      assert.deepEqual(bPage.body.requests, []);
    });
  });
}

for (const kind of DB_KINDS) {
  describe(`NUL characters (${kind})`, () => {
    test('are refused with a 400 naming the field, never a database error', async () => {
      const gw = await startTestGateway(kind);
      try {
        const { session } = await gw.signup();
        const cases: [string, string, unknown, string][] = [
          ['GET', '/api/v1/tenant/requests/a%00b', undefined, 'request_id'],
          ['GET', '/api/v1/tenant/usage?tag=a%00b', undefined, 'tag'],
          ['DELETE', '/api/v1/tenant/api-keys/a%00b', undefined, 'id'],
          ['POST', '/api/v1/tenant/api-keys', { name: 'a\u0000b' }, 'name'],
          ['POST', '/api/v1/tenant/provider-keys', { provider: 'openai', key: 'abcdefgh\u0000' }, 'key'],
          ['POST', '/api/v1/signup', { name: 'a\u0000b', email: 'nul@example.com' }, 'name'],
        ];
        for (const [method, path, body, field] of cases) {
          const r = await gw.request(method, path, { token: session, ...(body ? { body } : {}) });
          assert.equal(r.status, 400, path);
          assert.equal(r.body.code, 'invalid_characters', path);
          assert.equal(r.body.errors[0].field, field);
        }
        const cursor = Buffer.from('1.a\u0000b').toString('base64url');
        const r = await gw.request('GET', `/api/v1/tenant/requests?cursor=${cursor}`, { token: session });
        assert.equal(r.status, 400);
        assert.equal(r.body.code, 'invalid_cursor');
      } finally {
        await gw.close();
      }
    });
  });
}
