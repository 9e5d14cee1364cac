import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadProviderKeys } from '../../../src/gateway/control-plane/provider-keys.ts';
import { decrypt } from '../../../src/platform/crypto.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

const SECRET = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789WXYZ';

for (const kind of DB_KINDS) {
  describe(`provider keys (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind);
    });
    after(() => gw.close());

    test('stored sealed with AES-256-GCM bound to tenant and provider; the list shows metadata and the last 4 characters', async () => {
      const { session, tenantId } = await gw.signup();
      gw.providerChanges.length = 0;
      const r = await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'openai', key: `  ${SECRET}\n` } });
      assert.equal(r.status, 201);
      assert.deepEqual(r.body, { provider: 'openai', base_url: null, key_last4: 'WXYZ', created_at: new Date(gw.clock.now()).toISOString() });
      assert.deepEqual(gw.providerChanges, [tenantId]);
      const row = await gw.deps.db.selectFrom('provider_keys').selectAll().where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
      assert.ok(!row.key_sealed.includes(SECRET));
      assert.equal(decrypt(gw.deps.config.encryptionKey, row.key_sealed, `provider-key:${tenantId}:openai`), SECRET);
      assert.throws(() => decrypt(gw.deps.config.encryptionKey, row.key_sealed, 'provider-key:other-tenant:openai'), 'bound to its tenant');
      const list = await gw.request('GET', '/api/v1/tenant/provider-keys', { token: session });
      assert.deepEqual(list.body.provider_keys, [r.body]);
      assert.ok(!list.text.includes(SECRET.slice(0, 20)));
    });

    test('POST replaces the key of the same provider; DELETE is idempotent; loadProviderKeys opens them with the defaults filled in', async () => {
      const { session, tenantId } = await gw.signup();
      await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'anthropic', key: 'old-key-0000' } });
      gw.clock.advance(5000);
      const again = await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'anthropic', key: 'new-key-1111', base_url: 'https://93.184.215.14/v1/' } });
      assert.equal(again.status, 201);
      assert.equal(again.body.base_url, 'https://93.184.215.14/v1');
      await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'groq', key: 'gsk_groq_key' } });
      const list = await gw.request('GET', '/api/v1/tenant/provider-keys', { token: session });
      assert.deepEqual(list.body.provider_keys.map((k: { provider: string; key_last4: string }) => `${k.provider}:${k.key_last4}`), ['anthropic:1111', 'groq:_key']);
      const keys = await loadProviderKeys(gw.deps.db, [gw.deps.config.encryptionKey], tenantId);
      assert.deepEqual(Object.fromEntries(keys), {
        anthropic: { apiKey: 'new-key-1111', baseUrl: 'https://93.184.215.14/v1' },
        groq: { apiKey: 'gsk_groq_key', baseUrl: 'https://api.groq.com/openai/v1' },
      });
      gw.providerChanges.length = 0;
      assert.equal((await gw.request('DELETE', '/api/v1/tenant/provider-keys/groq', { token: session })).status, 204);
      assert.equal((await gw.request('DELETE', '/api/v1/tenant/provider-keys/groq', { token: session })).status, 204);
      assert.deepEqual(gw.providerChanges, [tenantId, tenantId]);
      assert.deepEqual([...(await loadProviderKeys(gw.deps.db, [gw.deps.config.encryptionKey], tenantId)).keys()], ['anthropic']);
      const unknown = await gw.request('DELETE', '/api/v1/tenant/provider-keys/nope', { token: session });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.code, 'unknown_provider');
    });

    test('a sealed key moved to another tenant does not open, and is reported rather than returned', async () => {
      const a = await gw.signup();
      const b = await gw.signup();
      await gw.request('POST', '/api/v1/tenant/provider-keys', { token: a.session, body: { provider: 'openai', key: SECRET } });
      const row = await gw.deps.db.selectFrom('provider_keys').selectAll().where('tenant_id', '=', a.tenantId).executeTakeFirstOrThrow();
      await gw.deps.db.insertInto('provider_keys').values({ ...row, tenant_id: b.tenantId }).execute();
      const unreadable: string[] = [];
      const keys = await loadProviderKeys(gw.deps.db, [gw.deps.config.encryptionKey], b.tenantId, (p) => unreadable.push(p));
      assert.equal(keys.size, 0);
      assert.deepEqual(unreadable, ['openai']);
    });

    test('validation: unknown provider, short key, base_url required for openai-compatible, each naming its field', async () => {
      const { session } = await gw.signup();
      const cases: [unknown, string, string][] = [
        [{ provider: 'nope', key: SECRET }, 'unknown_provider', 'provider'],
        [{ provider: 'openai', key: 'short' }, 'invalid_key', 'key'],
        [{ provider: 'openai', key: '' }, 'validation_failed', 'key'],
        [{ key: SECRET }, 'validation_failed', 'provider'],
        [{ provider: 'openai-compatible', key: SECRET }, 'base_url_required', 'base_url'],
        [{ provider: 'openai', key: SECRET, base_url: 'not a url' }, 'invalid_base_url', 'base_url'],
        [{ provider: 'openai', key: SECRET, base_url: 'http://93.184.215.14/v1' }, 'invalid_base_url', 'base_url'],
        [{ provider: 'openai', key: SECRET, base_url: 'https://user:pw@93.184.215.14/v1' }, 'invalid_base_url', 'base_url'],
      ];
      for (const [body, code, field] of cases) {
        const r = await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.code, code, JSON.stringify(body));
        assert.equal(r.body.errors[0].field, field);
      }
    });

    test('a base_url at a private, loopback, link-local or metadata address is refused in every notation', async () => {
      const { session } = await gw.signup();
      for (const host of ['127.0.0.1', '127.1', '0x7f.1', '2130706433', '[::1]', '[::ffff:127.0.0.1]', '169.254.169.254', '[fd00::1]', '0.0.0.0', '10.0.0.5', 'localhost']) {
        const r = await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'openai-compatible', key: SECRET, base_url: `https://${host}:8000/v1` } });
        assert.equal(r.status, 400, host);
        assert.equal(r.body.code, 'base_url_not_allowed', host);
        assert.match(r.body.detail, /GATEWAY_ALLOW_PRIVATE_UPSTREAMS/);
      }
      assert.equal((await gw.request('GET', '/api/v1/tenant/provider-keys', { token: session })).body.provider_keys.length, 0);
    });
  });

  describe(`provider keys with GATEWAY_ALLOW_PRIVATE_UPSTREAMS (${kind})`, () => {
    test('a list allows its hosts and ranges, over http too, and nothing else', async () => {
      const gw = await startTestGateway(kind, { GATEWAY_ALLOW_PRIVATE_UPSTREAMS: 'ollama.internal, 10.0.0.0/8' });
      try {
        const { session } = await gw.signup();
        const put = (base_url: string) => gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'openai-compatible', key: 'local-key-0000', base_url } });
        assert.equal((await put('http://10.1.2.3:8000/v1')).status, 201);
        assert.equal((await put('http://ollama.internal:11434/v1')).status, 201);
        assert.equal((await put('http://127.0.0.1:11434/v1')).body.code, 'base_url_not_allowed');
        assert.equal((await put('http://192.168.1.2/v1')).body.code, 'base_url_not_allowed');
      } finally {
        await gw.close();
      }
    });

    test('true allows any host, http included', async () => {
      const gw = await startTestGateway(kind, { GATEWAY_ALLOW_PRIVATE_UPSTREAMS: 'true' });
      try {
        const { session } = await gw.signup();
        const r = await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'openai-compatible', key: 'local-key-0000', base_url: 'http://127.0.0.1:1234/v1' } });
        assert.equal(r.status, 201);
        assert.equal(r.body.base_url, 'http://127.0.0.1:1234/v1');
      } finally {
        await gw.close();
      }
    });
  });
}
