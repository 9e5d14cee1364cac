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

    test('PATCH renames a key (trimmed, the rules of creation), alone or with its limits; limits alone still work; a foreign or revoked key is 404', async () => {
      const a = await gw.signup();
      const b = await gw.signup();
      const patch = (session: string, id: string, body: unknown) => gw.request('PATCH', `/api/v1/tenant/api-keys/${id}`, { token: session, body });
      await patch(a.session, a.apiKeyId, { limits: { requests_per_minute: 5 } });
      const told = gw.revoked.length;

      const renamed = await patch(a.session, a.apiKeyId, { name: '  build server  ' });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.name, 'build server');
      assert.deepEqual(renamed.body.limits, { requests_per_minute: 5 }, 'the limits are kept');
      assert.deepEqual(Object.keys(renamed.body).sort(), ['created_at', 'id', 'last_used_at', 'limits', 'name', 'prefix']);
      assert.equal(gw.revoked.length, told, 'a name is not in the data plane’s key cache: no replica is told');
      const listed = (await gw.request('GET', '/api/v1/tenant/api-keys', { token: a.session })).body.api_keys;
      assert.deepEqual(listed.map((k: { name: string }) => k.name), ['build server']);

      const both = await patch(a.session, a.apiKeyId, { name: 'ci', limits: null });
      assert.deepEqual([both.status, both.body.name, both.body.limits], [200, 'ci', {}]);
      assert.equal(gw.revoked.length, told + 1, 'new limits are told to every replica');
      const limitsOnly = await patch(a.session, a.apiKeyId, { limits: { tokens_per_day: 10 } });
      assert.deepEqual([limitsOnly.status, limitsOnly.body.name, limitsOnly.body.limits], [200, 'ci', { tokens_per_day: 10 }]);

      const refusals: [unknown, string, string][] = [
        [{ name: '   ' }, 'invalid_name', 'name'],
        [{ name: '' }, 'validation_failed', 'name'],
        [{ name: 'x'.repeat(101) }, 'validation_failed', 'name'],
        [{ name: 7 }, 'validation_failed', 'name'],
        [{ nickname: 'x' }, 'validation_failed', 'nickname'],
        [{}, 'validation_failed', 'limits'],
        [{ name: '   ', limits: { requests_per_minute: 1 } }, 'invalid_name', 'name'],
      ];
      for (const [body, code, field] of refusals) {
        const r = await patch(a.session, a.apiKeyId, body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.code, code, JSON.stringify(body));
        assert.equal(r.body.errors[0].field, field, JSON.stringify(body));
      }
      const empty = await patch(a.session, a.apiKeyId, {});
      assert.equal(empty.body.detail, 'Send `name`, `limits`, or both.');
      assert.deepEqual(empty.body.errors.map((e: { field: string }) => e.field), ['limits', 'name']);

      const foreign = await patch(b.session, a.apiKeyId, { name: 'stolen' });
      assert.equal(foreign.status, 404);
      assert.equal(foreign.body.code, 'api_key_not_found');
      await gw.request('DELETE', `/api/v1/tenant/api-keys/${a.apiKeyId}`, { token: a.session });
      assert.equal((await patch(a.session, a.apiKeyId, { name: 'again' })).status, 404, 'a revoked key keeps its name');
      const row = await gw.deps.db.selectFrom('api_keys').select(['name', 'limits']).where('id', '=', a.apiKeyId).executeTakeFirstOrThrow();
      assert.deepEqual([row.name, JSON.parse(row.limits)], ['ci', { tokens_per_day: 10 }], 'refusals changed nothing');
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
