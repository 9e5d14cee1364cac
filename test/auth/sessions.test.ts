import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { purgeExpired } from '../../src/auth/purge.ts';
import { sha256 } from '../../src/platform/crypto.ts';
import { API_KEY, startTestAuth, type TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';

const DAY = 86_400_000;

for (const kind of DB_KINDS) {
  describe(`sessions: /v1/me and /v1/logout (${kind})`, () => {
    let auth: TestAuth;
    let email: string;
    before(async () => {
      auth = await startTestAuth(kind);
      email = (await auth.verifiedAccount()).email;
    });
    after(() => auth.close());

    test('GET /v1/me answers the user of a live session', async () => {
      const token = await auth.login(email);
      const r = await auth.request('GET', '/v1/me', { token });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body), ['user']);
      assert.equal(r.body.user.email, email);
      assert.equal(r.body.user.email_verified, true);
    });

    test('only the SHA-256 of the session token is stored', async () => {
      const token = await auth.login(email);
      const row = await auth.service.deps.db.selectFrom('sessions').selectAll().where('token_hash', '=', sha256(token)).executeTakeFirst();
      assert.ok(row);
      const all = await auth.service.deps.db.selectFrom('sessions').select('token_hash').execute();
      assert.ok(all.every((s) => s.token_hash !== token));
    });

    test('logout revokes the session; repeating it is 204 again; /v1/me is then 401', async () => {
      const token = await auth.login(email);
      assert.equal((await auth.request('POST', '/v1/logout', { token })).status, 204);
      assert.equal((await auth.request('POST', '/v1/logout', { token })).status, 204);
      const me = await auth.request('GET', '/v1/me', { token });
      assert.equal(me.status, 401);
      assert.equal(me.body.code, 'invalid_session');
    });

    test('logout is still 204 once the purge has removed the session, and for a well-formed token never issued', async () => {
      const revoked = await auth.login(email);
      assert.equal((await auth.request('POST', '/v1/logout', { token: revoked })).status, 204);
      const expired = await auth.login(email);
      auth.clock.advance(31 * DAY);
      await purgeExpired(auth.service.deps);
      const left = await auth.service.deps.db.selectFrom('sessions').select('token_hash').execute();
      assert.ok(!left.some((s) => s.token_hash === sha256(revoked) || s.token_hash === sha256(expired)), 'purged');
      for (const token of [revoked, expired, `ses_${'A'.repeat(43)}`]) {
        assert.equal((await auth.request('POST', '/v1/logout', { token })).status, 204);
      }
    });

    test('logout of one session leaves the others signed in', async () => {
      const a = await auth.login(email);
      const b = await auth.login(email);
      await auth.request('POST', '/v1/logout', { token: a });
      assert.equal((await auth.request('GET', '/v1/me', { token: b })).status, 200);
    });

    test('a session expires 30 days after creation', async () => {
      const token = await auth.login(email);
      auth.clock.advance(30 * DAY - 1000);
      assert.equal((await auth.request('GET', '/v1/me', { token })).status, 200);
      auth.clock.advance(2000);
      assert.equal((await auth.request('GET', '/v1/me', { token })).status, 401);
    });

    test('unknown, malformed or missing session tokens are 401', async () => {
      for (const token of ['ses_unknown', 'not-even-prefixed']) {
        const r = await auth.request('GET', '/v1/me', { token });
        assert.equal(r.status, 401);
        assert.equal(r.body.code, 'invalid_session');
      }
      assert.equal((await auth.request('GET', '/v1/me')).status, 401);
      assert.equal((await auth.request('GET', '/v1/me', { headers: { authorization: 'Basic abc' } })).status, 401);
      // Not the shape of a session token (a PAT, a typo): the client has a bug worth seeing.
      assert.equal((await auth.request('POST', '/v1/logout', { token: 'ses_unknown' })).status, 401);
      assert.equal((await auth.request('POST', '/v1/logout', { token: `pat_${'A'.repeat(43)}` })).status, 401);
      assert.equal((await auth.request('POST', '/v1/logout')).status, 401);
    });
  });

  describe(`X-Api-Key (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind);
    });
    after(() => auth.close());

    const routes: [string, string][] = [
      ['POST', '/v1/register'],
      ['POST', '/v1/verify'],
      ['POST', '/v1/resend-verification'],
      ['POST', '/v1/login'],
      ['POST', '/v1/logout'],
      ['GET', '/v1/me'],
      ['GET', '/v1/sessions'],
      ['DELETE', '/v1/sessions/00000000-0000-4000-8000-000000000000'],
      ['GET', '/v1/grants'],
      ['DELETE', '/v1/grants/svc_x'],
      ['GET', '/openapi.json'],
    ];

    test('every API route refuses a missing or wrong key with 401 invalid_api_key', async () => {
      for (const [method, path] of routes) {
        for (const key of [false, 'wrong', `${API_KEY}x`, API_KEY.slice(0, -1)] as const) {
          const r = await auth.request(method, path, { key, body: method === 'POST' ? {} : undefined });
          assert.equal(r.status, 401, `${method} ${path} with ${key}`);
          assert.equal(r.body.code, 'invalid_api_key');
        }
      }
    });

    test('AUTH_API_KEY rotates without downtime: the key in AUTH_API_KEY_PREVIOUS is accepted beside the new one, any other refused', async (t) => {
      const next = `${'n'.repeat(40)}-rotated`;
      const rotating = await startTestAuth(kind, { AUTH_API_KEY: next, AUTH_API_KEY_PREVIOUS: API_KEY });
      t.after(() => rotating.close());
      for (const key of [next, API_KEY]) assert.equal((await rotating.request('GET', '/openapi.json', { key })).status, 200, 'old and new keys both work');
      const wrong = await rotating.request('GET', '/openapi.json', { key: `${next}x` });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.code, 'invalid_api_key');
      const done = await startTestAuth(kind, { AUTH_API_KEY: next });
      t.after(() => done.close());
      assert.equal((await done.request('GET', '/openapi.json', { key: API_KEY })).status, 401, 'once AUTH_API_KEY_PREVIOUS is gone, so is the old key');
    });

    test('/healthz, /readyz and /metrics need no key', async () => {
      const health = await auth.request('GET', '/healthz', { key: false });
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, { ok: true });
      const ready = await auth.request('GET', '/readyz', { key: false });
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.body, { ok: true });
      const metrics = await auth.request('GET', '/metrics', { key: false });
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /auth_http_requests_total/);
    });

    test('/readyz is 503 when migrations are missing', async () => {
      await auth.service.deps.db.deleteFrom('kysely_migration' as never).execute();
      const r = await auth.request('GET', '/readyz', { key: false });
      assert.equal(r.status, 503);
      assert.deepEqual(r.body, { ok: false });
    });

    test('the OpenAPI document describes the API', async () => {
      const r = await auth.request('GET', '/openapi.json');
      assert.equal(r.status, 200);
      assert.ok(r.body.paths['/v1/register'].post);
      assert.ok(r.body.paths['/v1/me'].get);
      assert.equal(r.body.paths['/healthz'], undefined);
    });
  });
}
