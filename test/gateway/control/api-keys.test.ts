import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256 } from '../../../src/platform/crypto.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

for (const kind of DB_KINDS) {
  describe(`API keys (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind);
    });
    after(() => gw.close());

    test('create returns the key once; the list shows metadata only, newest first', async () => {
      const { session, apiKeyId } = await gw.signup();
      gw.clock.advance(1000);
      const r = await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name: ' ci ' } });
      assert.equal(r.status, 201);
      assert.equal(r.headers['cache-control'], 'no-store');
      assert.match(r.body.key, /^sk-gw-[A-Za-z0-9_-]{43}$/);
      assert.equal(r.body.prefix, r.body.key.slice(0, 10));
      assert.equal(r.body.name, 'ci');
      assert.equal(r.body.last_used_at, null);
      assert.deepEqual(Object.keys(r.body).sort(), ['created_at', 'id', 'key', 'last_used_at', 'limits', 'name', 'prefix']);
      const row = await gw.deps.db.selectFrom('api_keys').selectAll().where('id', '=', r.body.id).executeTakeFirstOrThrow();
      assert.equal(row.key_hash, sha256(r.body.key));
      assert.ok(!JSON.stringify(row).includes(r.body.key), 'the plaintext is not stored');

      const list = await gw.request('GET', '/api/v1/tenant/api-keys', { token: session });
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.api_keys.map((k: { id: string }) => k.id), [r.body.id, apiKeyId]);
      assert.ok(!list.text.includes(r.body.key));
      assert.ok(!list.text.includes(row.key_hash));
      assert.deepEqual(Object.keys(list.body.api_keys[0]).sort(), ['created_at', 'id', 'last_used_at', 'limits', 'name', 'prefix']);
    });

    test('revoke: idempotent, the data plane is told the key hash after the commit, the key leaves the list', async () => {
      const { session, apiKeyId, apiKey } = await gw.signup();
      gw.revoked.length = 0;
      let revokedWhenTold: number | null | undefined;
      const told = gw.deps.apiKeyRevoked;
      gw.deps.apiKeyRevoked = async (hash) => {
        const row = await gw.deps.db.selectFrom('api_keys').select('revoked_at').where('key_hash', '=', hash).executeTakeFirst();
        revokedWhenTold = row?.revoked_at;
        await told(hash);
      };
      try {
        assert.equal((await gw.request('DELETE', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session })).status, 204);
        assert.equal(revokedWhenTold, gw.clock.now(), 'already committed when the caches hear of it');
        assert.equal((await gw.request('DELETE', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session })).status, 204);
      } finally {
        gw.deps.apiKeyRevoked = told;
      }
      assert.deepEqual(gw.revoked, [sha256(apiKey), sha256(apiKey)]);
      const list = await gw.request('GET', '/api/v1/tenant/api-keys', { token: session });
      assert.deepEqual(list.body.api_keys, []);
      const unknown = await gw.request('DELETE', '/api/v1/tenant/api-keys/nope', { token: session });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.code, 'api_key_not_found');
    });

    test('validation names the field', async () => {
      const { session } = await gw.signup();
      for (const body of [{}, { name: '' }, { name: 'x'.repeat(101) }, { name: 5 }]) {
        const r = await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.errors[0].field, 'name');
      }
      const blank = await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name: '   ' } });
      assert.equal(blank.body.code, 'invalid_name');
    });
  });
}
