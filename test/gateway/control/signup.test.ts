import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256 } from '../../../src/platform/crypto.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { ADMIN_TOKEN, startTestGateway, type TestGateway, uniqueEmail } from '../../helpers/gateway.ts';

const DAY = 86_400_000;

for (const kind of DB_KINDS) {
  describe(`gateway signup and sessions (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind, { GATEWAY_LIMIT_SIGNUP: '5/3600' });
    });
    after(() => gw.close());

    test('signup creates a workspace, its first API key and a session; only hashes are stored', async () => {
      const email = uniqueEmail();
      const r = await gw.request('POST', '/api/v1/signup', { body: { name: ' Acme Labs ', email: `  ${email.toUpperCase()} ` } });
      assert.equal(r.status, 201);
      assert.equal(r.headers['cache-control'], 'no-store');
      assert.deepEqual(Object.keys(r.body).sort(), ['api_key', 'api_key_id', 'session_expires_at', 'session_token', 'tenant_id']);
      assert.match(r.body.api_key, /^sk-gw-[A-Za-z0-9_-]{43}$/);
      assert.match(r.body.session_token, /^gws_[A-Za-z0-9_-]{43}$/);
      assert.equal(Date.parse(r.body.session_expires_at), gw.clock.now() + 30 * DAY);
      const tenant = await gw.deps.db.selectFrom('tenants').selectAll().where('id', '=', r.body.tenant_id).executeTakeFirstOrThrow();
      assert.equal(tenant.email, email, 'normalised');
      assert.equal(tenant.name, 'Acme Labs');
      const key = await gw.deps.db.selectFrom('api_keys').selectAll().where('tenant_id', '=', tenant.id).executeTakeFirstOrThrow();
      assert.equal(key.key_hash, sha256(r.body.api_key));
      assert.equal(key.name, 'default');
      const session = await gw.deps.db.selectFrom('gateway_sessions').selectAll().where('tenant_id', '=', tenant.id).executeTakeFirstOrThrow();
      assert.equal(session.token_hash, sha256(r.body.session_token));
      const me = await gw.request('GET', '/api/v1/tenant', { token: r.body.session_token });
      assert.equal(me.status, 200);
      assert.deepEqual(me.body, { id: tenant.id, name: 'Acme Labs', email, email_status: 'unconfirmed', store_bodies: false, settings: {}, created_at: new Date(gw.clock.now()).toISOString() });
    });

    test('an address already signed up, in any case: 409 email_taken, and nothing else is created', async () => {
      const { email } = await gw.signup();
      const before = await gw.deps.db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const r = await gw.request('POST', '/api/v1/signup', { body: { name: 'Again', email: email.toUpperCase() } });
      assert.equal(r.status, 409);
      assert.equal(r.body.code, 'email_taken');
      assert.match(r.body.detail, /magic-link/);
      assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
      const after = await gw.deps.db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n));
    });

    test('validation errors name the field', async () => {
      const cases: [unknown, string, string][] = [
        [{ name: 'A', email: 'not-an-address' }, 'invalid_email', 'email'],
        [{ name: '   ', email: uniqueEmail() }, 'invalid_name', 'name'],
        [{ email: uniqueEmail() }, 'validation_failed', 'name'],
        [{ name: 'A' }, 'validation_failed', 'email'],
        [{ name: 'x'.repeat(101), email: uniqueEmail() }, 'validation_failed', 'name'],
        [{ name: 'A', email: 7 }, 'validation_failed', 'email'],
      ];
      for (const [body, code, field] of cases) {
        const r = await gw.request('POST', '/api/v1/signup', { body, ip: '203.0.113.50' });
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.code, code);
        assert.equal(r.body.errors[0].field, field);
      }
      const bad = await gw.request('POST', '/api/v1/signup', { headers: { 'content-type': 'application/json' }, form: '{"name":', ip: '203.0.113.50' });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.code, 'malformed_json');
    });

    test('signup is rate-limited per IP: 429 with Retry-After once the bucket is empty', async () => {
      const ip = '203.0.113.77';
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await gw.request('POST', '/api/v1/signup', { body: { name: 'A', email: uniqueEmail() }, ip })).status);
      assert.deepEqual(statuses, [201, 201, 201, 201, 201, 429]);
      const r = await gw.request('POST', '/api/v1/signup', { body: { name: 'A', email: uniqueEmail() }, ip });
      assert.equal(r.body.code, 'rate_limited');
      assert.ok(Number(r.headers['retry-after']) >= 1);
      assert.equal((await gw.request('POST', '/api/v1/signup', { body: { name: 'A', email: uniqueEmail() }, ip: '203.0.113.78' })).status, 201);
    });

    test('the session hook: missing, malformed, unknown, an API key in its place, expired', async () => {
      const { apiKey, session } = await gw.signup();
      const none = await gw.request('GET', '/api/v1/tenant');
      assert.equal(none.status, 401);
      assert.equal(none.body.code, 'missing_session');
      const key = await gw.request('GET', '/api/v1/tenant/api-keys', { token: apiKey });
      assert.equal(key.status, 401);
      assert.equal(key.body.code, 'api_key_not_session');
      assert.match(key.body.detail, /API key \(sk-gw-\.\.\.\), not a session token/);
      for (const token of ['gws_short', `gws_${'A'.repeat(43)}`, 'ses_whatever']) {
        const r = await gw.request('GET', '/api/v1/tenant', { token });
        assert.equal(r.status, 401, token);
        assert.equal(r.body.code, 'invalid_session');
      }
      gw.clock.advance(30 * DAY - 1);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: session })).status, 200);
      gw.clock.advance(1);
      const expired = await gw.request('GET', '/api/v1/tenant', { token: session });
      assert.equal(expired.status, 401);
      assert.equal(expired.body.code, 'invalid_session');
    });

    test('logout ends the session and is idempotent', async () => {
      const { session } = await gw.signup();
      assert.equal((await gw.request('POST', '/api/v1/auth/logout', { token: session })).status, 204);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: session })).status, 401);
      assert.equal((await gw.request('POST', '/api/v1/auth/logout', { token: session })).status, 204, 'again: the same answer');
      const missing = await gw.request('POST', '/api/v1/auth/logout');
      assert.equal(missing.status, 401);
      assert.equal(missing.body.code, 'missing_session');
      assert.equal((await gw.request('POST', '/api/v1/auth/logout', { token: 'sk-gw-x' })).body.code, 'invalid_session');
    });

    test('PATCH /api/v1/tenant renames and turns body storage on; validation names the field', async () => {
      const { session } = await gw.signup();
      const r = await gw.request('PATCH', '/api/v1/tenant', { token: session, body: { store_bodies: true, name: 'Renamed' } });
      assert.equal(r.status, 200);
      assert.equal(r.body.store_bodies, true);
      assert.equal(r.body.name, 'Renamed');
      const bad = await gw.request('PATCH', '/api/v1/tenant', { token: session, body: { store_bodies: 'yes' } });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errors[0].field, 'store_bodies');
    });

    test('PATCH /api/v1/tenant settings: a section sent replaces the stored one, others stay, null resets one; the data plane is told', async () => {
      const { session, tenantId } = await gw.signup();
      const before = gw.providerChanges.length;
      const first = await gw.request('PATCH', '/api/v1/tenant', {
        token: session,
        body: { settings: { cache: { ttl_seconds: 60 }, compaction: { default: 'safe' } } },
      });
      assert.equal(first.status, 200);
      assert.deepEqual(first.body.settings, { cache: { ttl_seconds: 60 }, compaction: { default: 'safe' } });
      assert.deepEqual(gw.providerChanges.slice(before), [tenantId]);
      const second = await gw.request('PATCH', '/api/v1/tenant', { token: session, body: { settings: { cache: { enabled: false }, compaction: null } } });
      assert.deepEqual(second.body.settings, { cache: { enabled: false } });
      const read = await gw.request('GET', '/api/v1/tenant', { token: session });
      assert.deepEqual(read.body.settings, { cache: { enabled: false } });
      const outOfRange = await gw.request('PATCH', '/api/v1/tenant', { token: session, body: { settings: { cache: { ttl_seconds: 0 } } } });
      assert.equal(outOfRange.status, 400);
      assert.match(outOfRange.body.errors[0].field, /settings/);
      // A misspelt field is refused, not silently dropped (which would leave the setting at its old value).
      const misspelt = await gw.request('PATCH', '/api/v1/tenant', { token: session, body: { settings: { cache: { ttl: 5 } } } });
      assert.equal(misspelt.status, 400);
      assert.match(JSON.stringify(misspelt.body.errors), /ttl/);
      assert.deepEqual((await gw.request('GET', '/api/v1/tenant', { token: session })).body.settings, { cache: { enabled: false } });
    });
  });

  describe(`GATEWAY_SIGNUP modes (${kind})`, () => {
    test('closed: 403 signup_closed', async () => {
      const gw = await startTestGateway(kind, { GATEWAY_SIGNUP: 'closed' });
      try {
        const r = await gw.request('POST', '/api/v1/signup', { body: { name: 'A', email: uniqueEmail() } });
        assert.equal(r.status, 403);
        assert.equal(r.body.code, 'signup_closed');
      } finally {
        await gw.close();
      }
    });

    test('token: only with the admin token as Bearer', async () => {
      const gw = await startTestGateway(kind, { GATEWAY_SIGNUP: 'token', GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN });
      try {
        for (const token of [undefined, 'wrong-token', `${ADMIN_TOKEN}x`]) {
          const r = await gw.request('POST', '/api/v1/signup', { body: { name: 'A', email: uniqueEmail() }, ...(token ? { token } : {}) });
          assert.equal(r.status, 401, String(token));
          assert.equal(r.body.code, 'admin_token_required');
        }
        const ok = await gw.request('POST', '/api/v1/signup', { body: { name: 'A', email: uniqueEmail() }, token: ADMIN_TOKEN });
        assert.equal(ok.status, 201);
      } finally {
        await gw.close();
      }
    });
  });
}
