import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { purgeGateway } from '../../../src/gateway/usage/purge.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

const DAY = 86_400_000;
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? assert.fail('no CSRF field');

/**
 * What a workspace can create through the control plane is bounded: live API
 * keys by a cap and their creation by a rate; provider keys (one per
 * provider) by a rate on storing and testing them, each of which resolves a
 * host or calls out; revoked keys are purged once no record names them.
 */
for (const kind of DB_KINDS) {
  describe(`API keys per workspace (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind, { GATEWAY_MAX_API_KEYS_PER_TENANT: '5' });
    });
    after(() => gw.close());

    const create = (session: string, name: string) => gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name } });

    test('at most GATEWAY_MAX_API_KEYS_PER_TENANT live keys: 409 past it, room again after a revocation', async () => {
      const { session, apiKeyId } = await gw.signup();
      for (let i = 1; i < 5; i++) assert.equal((await create(session, `key ${i}`)).status, 201, `key ${i}`);
      const refused = await create(session, 'one too many');
      assert.equal(refused.status, 409);
      assert.match(String(refused.headers['content-type']), /application\/problem\+json/);
      assert.equal(refused.body.code, 'api_key_limit_reached');
      assert.equal(refused.body.detail, 'This workspace already has 5 live API keys; revoke one before creating another.');
      assert.equal((await gw.request('GET', '/api/v1/tenant/api-keys', { token: session })).body.api_keys.length, 5);
      // Another workspace has its own room.
      const other = await gw.signup();
      assert.equal((await create(other.session, 'theirs')).status, 201);
      assert.equal((await gw.request('DELETE', `/api/v1/tenant/api-keys/${apiKeyId}`, { token: session })).status, 204);
      assert.equal((await create(session, 'after a revocation')).status, 201);
      assert.equal((await create(session, 'and no more')).status, 409);
    });

    test('creations sent at once cannot pass the cap together', async () => {
      const { session } = await gw.signup();
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => create(session, `burst ${i}`)));
      assert.equal(results.filter((r) => r.status === 201).length, 4, 'the signup key and four more');
      assert.ok(results.every((r) => r.status === 201 || r.body.code === 'api_key_limit_reached'), results.map((r) => r.status).join());
      assert.equal((await gw.request('GET', '/api/v1/tenant/api-keys', { token: session })).body.api_keys.length, 5);
    });

    test("the console's form says why a key was not created", async () => {
      const { session } = await gw.signup();
      for (let i = 1; i < 5; i++) await create(session, `key ${i}`);
      const cookie = `gw_console=${session}`;
      const page = await gw.request('GET', '/api-keys', { headers: { cookie } });
      const r = await gw.request('POST', '/api-keys', { form: new URLSearchParams({ csrf: csrfOf(page.text), name: 'from the console' }).toString(), headers: { cookie } });
      assert.equal(r.status, 409);
      assert.match(r.text, /role="alert">This workspace already has 5 live API keys; revoke one before creating another\./);
    });

    test('revoked keys are purged once the retention has passed since their revocation; live ones stay', async () => {
      const { session, tenantId } = await gw.signup();
      const old = (await create(session, 'revoked long ago')).body.id as string;
      const recent = (await create(session, 'revoked lately')).body.id as string;
      await gw.request('DELETE', `/api/v1/tenant/api-keys/${old}`, { token: session });
      gw.clock.advance(gw.deps.config.usage.retentionMs - DAY);
      await gw.request('DELETE', `/api/v1/tenant/api-keys/${recent}`, { token: session });
      gw.clock.advance(2 * DAY);
      await purgeGateway(gw.deps);
      const left = await gw.deps.db.selectFrom('api_keys').select('name').where('tenant_id', '=', tenantId).orderBy('name').execute();
      assert.deepEqual(left.map((k) => k.name), ['default', 'revoked lately']);
    });
  });

  describe(`rates of creation (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      // The defaults (the test helper raises every bucket; empty is unset).
      gw = await startTestGateway(kind, { GATEWAY_LIMIT_API_KEY_CREATE: '', GATEWAY_LIMIT_PROVIDER_KEYS: '3/3600' });
    });
    after(() => gw.close());

    test('API keys: 30 an hour per workspace by default, then 429 with Retry-After', async () => {
      const { session } = await gw.signup();
      const statuses: number[] = [];
      // The cap (100) is not what stops it: the rate is.
      for (let i = 0; i < 31; i++) statuses.push((await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name: `k${i}` } })).status);
      assert.deepEqual(statuses, [...Array(30).fill(201), 429]);
      const refused = await gw.request('POST', '/api/v1/tenant/api-keys', { token: session, body: { name: 'again' } });
      assert.equal(refused.status, 429);
      assert.equal(refused.body.code, 'rate_limited');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      const other = await gw.signup();
      assert.equal((await gw.request('POST', '/api/v1/tenant/api-keys', { token: other.session, body: { name: 'theirs' } })).status, 201, 'per workspace');
    });

    test('provider keys: storing (and testing) takes from a bucket per workspace', async () => {
      const { session } = await gw.signup();
      const put = () => gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'openai', key: 'sk-provider-0000' } });
      for (let i = 0; i < 3; i++) assert.equal((await put()).status, 201);
      const refused = await put();
      assert.equal(refused.status, 429);
      assert.equal(refused.body.code, 'rate_limited');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      // A request refused before any lookup (an unknown provider) takes nothing.
      const unknown = await gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'nope', key: 'sk-provider-0000' } });
      assert.equal(unknown.body.code, 'unknown_provider');
    });
  });
}
