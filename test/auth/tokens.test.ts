import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sha256 } from '../../src/platform/crypto.ts';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { startOAuth } from '../helpers/oauth.ts';
import { RawOAuth } from '../helpers/oauth-raw.ts';

const DAY = 86_400_000;
const KEYS = ['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'scope'];

for (const kind of DB_KINDS) {
  describe(`personal access tokens: /v1/tokens (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    before(async () => {
      auth = await startOAuth(kind);
      raw = new RawOAuth(auth);
    });
    after(() => auth.close());

    /** A fresh verified user's session token. */
    async function session(): Promise<string> {
      return auth.login((await auth.verifiedAccount()).email);
    }
    const create = (token: string, body: Record<string, unknown>) => auth.request('POST', '/v1/tokens', { token, body });
    const list = (token: string) => auth.request('GET', '/v1/tokens', { token });
    const revoke = (token: string, id: string) => auth.request('DELETE', `/v1/tokens/${id}`, { token });

    test('POST /v1/tokens answers 201 with the plaintext once, identity scope and 365 days by default', async () => {
      const s = await session();
      for (const body of [{ name: 'laptop agent' }, { name: 'empty scope', scope: '' }]) {
        const r = await create(s, body);
        assert.equal(r.status, 201, r.text);
        assert.match(r.body.token, /^pat_[A-Za-z0-9_-]{43}$/);
        assert.equal(r.body.scope, 'identity');
        assert.equal(r.body.name, body.name);
        assert.equal(Date.parse(r.body.created_at), auth.clock.now());
        assert.equal(Date.parse(r.body.expires_at), auth.clock.now() + 365 * DAY);
        assert.equal(r.body.last_used_at, null);
        assert.equal(r.headers.get('cache-control'), 'no-store');
      }
    });

    test('custom lifetime; known scopes accepted, unknown ones refused with invalid_scope', async () => {
      const s = await session();
      const short = await create(s, { name: 'short', expires_in_days: 7 });
      assert.equal(short.status, 201);
      assert.equal(Date.parse(short.body.expires_at), auth.clock.now() + 7 * DAY);
      const write = await create(s, { name: 'mail bot', scope: 'msg:messages:write' });
      assert.equal(write.status, 201);
      assert.equal(write.body.scope, 'msg:messages:write');
      for (const body of [{ name: 'zero', expires_in_days: 0 }, { name: 'too long', expires_in_days: 3651 }, { name: '' }]) {
        const r = await create(s, body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body.code, 'validation_failed');
      }
      assert.equal((await create(s, { name: '   ' })).body.code, 'invalid_name');
      const bad = await create(s, { name: 'bad', scope: 'identity admin:everything' });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.code, 'invalid_scope');
      assert.match(bad.body.detail, /admin:everything/);
    });

    test('GET /v1/tokens lists metadata only; the database holds only the SHA-256', async () => {
      const s = await session();
      const created = await create(s, { name: 'listed', scope: 'work:tasks:read' });
      const r = await list(s);
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body), ['tokens']);
      assert.equal(r.body.tokens.length, 1);
      assert.deepEqual(Object.keys(r.body.tokens[0]).sort(), KEYS);
      const { token, ...metadata } = created.body;
      assert.deepEqual(r.body.tokens[0], metadata);
      assert.ok(!r.text.includes(token), 'no plaintext in the list');
      assert.ok(!r.text.includes(sha256(token)), 'no hash in the list');

      const row = await auth.service.deps.db.selectFrom('personal_access_tokens').selectAll().where('id', '=', metadata.id).executeTakeFirstOrThrow();
      assert.equal(row.token_hash, sha256(token));
      assert.ok(!Object.values(row).includes(token), 'the plaintext is stored nowhere');
    });

    test('the list is newest first and leaves out revoked tokens', async () => {
      const s = await session();
      const names = ['first', 'second', 'third'];
      const ids: string[] = [];
      for (const name of names) {
        ids.push((await create(s, { name })).body.id);
        auth.clock.advance(1);
      }
      await revoke(s, ids[1]!);
      assert.deepEqual((await list(s)).body.tokens.map((t: { name: string }) => t.name), ['third', 'first']);
    });

    test('at most 20 live tokens: revoking one or letting one expire frees a slot', async () => {
      const s = await session();
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await create(s, { name: `t${i}`, ...(i === 0 ? { expires_in_days: 1 } : {}) });
        assert.equal(r.status, 201, r.text);
        ids.push(r.body.id);
      }
      const full = await create(s, { name: 'one too many' });
      assert.equal(full.status, 409);
      assert.equal(full.body.code, 'token_limit_reached');

      assert.equal((await revoke(s, ids[5]!)).status, 204);
      assert.equal((await create(s, { name: 'after revoke' })).status, 201);
      assert.equal((await create(s, { name: 'full again' })).status, 409);

      auth.clock.advance(DAY + 1000); // ids[0] expires
      assert.equal((await create(s, { name: 'after expiry' })).status, 201);
      assert.equal((await create(s, { name: 'full once more' })).status, 409);
    });

    test('25 concurrent creations for one user: exactly 20 succeed', async () => {
      const s = await session();
      const replies = await Promise.all(Array.from({ length: 25 }, (_, i) => create(s, { name: `parallel ${i}` })));
      const statuses = replies.map((r) => r.status).sort();
      assert.deepEqual(statuses, [...Array(20).fill(201), ...Array(5).fill(409)], JSON.stringify(replies.filter((r) => r.status >= 500).map((r) => r.body)));
      assert.equal((await list(s)).body.tokens.length, 20);
    });

    test("DELETE /v1/tokens/:id is 204 and idempotent; another user's or an unknown id is 404", async () => {
      const alice = await session();
      const bob = await session();
      const a = await create(alice, { name: 'alice' });
      const b = await create(bob, { name: 'bob' });
      assert.equal((await revoke(alice, a.body.id)).status, 204);
      assert.equal((await revoke(alice, a.body.id)).status, 204);
      assert.equal((await list(alice)).body.tokens.length, 0);

      const foreign = await revoke(alice, b.body.id);
      assert.equal(foreign.status, 404);
      assert.equal(foreign.body.code, 'token_not_found');
      assert.equal((await raw.userinfo(b.body.token)).status, 200, "bob's token still works");
      assert.equal((await revoke(alice, randomUUID())).status, 404);
      assert.equal((await revoke(alice, 'not-an-id')).status, 404);
    });

    test('without a live session every route is 401; without X-Api-Key 401 invalid_api_key', async () => {
      const s = await session();
      const pat = (await create(s, { name: 'not a session' })).body.token as string;
      for (const token of [undefined, 'ses_unknown', pat]) {
        for (const r of [
          await auth.request('POST', '/v1/tokens', { body: { name: 'x' }, ...(token ? { token } : {}) }),
          await auth.request('GET', '/v1/tokens', token ? { token } : {}),
          await auth.request('DELETE', `/v1/tokens/${randomUUID()}`, token ? { token } : {}),
        ]) {
          assert.equal(r.status, 401, r.text);
          assert.equal(r.body.code, 'invalid_session');
        }
      }
      const noKey = await auth.request('GET', '/v1/tokens', { token: s, key: false });
      assert.equal(noKey.status, 401);
      assert.equal(noKey.body.code, 'invalid_api_key');
    });

    test('a token works at userinfo and introspection; last_used_at is then set', async () => {
      const { email } = await auth.verifiedAccount();
      const s = await auth.login(email);
      const created = await create(s, { name: 'agent', scope: 'identity msg:messages:write' });
      const token = created.body.token as string;

      const info = await raw.userinfo(token);
      assert.equal(info.status, 200, info.text);
      assert.equal(info.body.email, email);
      assert.equal(info.body.email_verified, true);

      const intro = await raw.introspect(token);
      assert.equal(intro.status, 200);
      assert.equal(intro.body.active, true);
      assert.equal(intro.body.token_type, 'Bearer', 'RFC 7662: the OAuth token type');
      assert.equal(intro.body.token_kind, 'personal_access_token');
      assert.equal(intro.body.scope, 'identity msg:messages:write');
      assert.equal(intro.body.sub, info.body.sub);
      assert.equal(intro.body.username, email);
      assert.equal(intro.body.client_id, undefined);
      assert.equal(intro.body.exp, Math.floor(Date.parse(created.body.expires_at) / 1000));
      assert.equal(intro.body.iss, auth.url);

      const used = auth.clock.now();
      const lastUsed = async () => (await list(s)).body.tokens[0].last_used_at;
      assert.equal(await lastUsed(), new Date(used).toISOString());
      // Written at most once a minute.
      auth.clock.advance(30_000);
      await raw.userinfo(token);
      assert.equal(await lastUsed(), new Date(used).toISOString());
      auth.clock.advance(30_000);
      await raw.introspect(token);
      assert.equal(await lastUsed(), new Date(auth.clock.now()).toISOString());
    });

    test('a token without identity is 403 at userinfo; a session token is no bearer token there', async () => {
      const s = await session();
      const mail = (await create(s, { name: 'mail only', scope: 'msg:messages:read' })).body.token as string;
      const info = await raw.userinfo(mail);
      assert.equal(info.status, 403);
      assert.match(info.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
      assert.equal((await raw.introspect(mail)).body.active, true);
      assert.equal((await raw.userinfo(s)).status, 401);
      assert.deepEqual((await raw.introspect(s)).body, { active: false });
    });

    test('a revoked or expired token is refused: 401 invalid_token at userinfo, inactive at introspection', async () => {
      const s = await session();
      const revoked = (await create(s, { name: 'revoked' })).body;
      const expiring = (await create(s, { name: 'expiring', expires_in_days: 1 })).body;
      for (const t of [revoked, expiring]) assert.equal((await raw.userinfo(t.token)).status, 200);

      await revoke(s, revoked.id);
      auth.clock.advance(DAY);
      for (const t of [revoked, expiring]) {
        const info = await raw.userinfo(t.token);
        assert.equal(info.status, 401);
        assert.match(info.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
        const intro = await raw.introspect(t.token);
        assert.equal(intro.status, 200);
        assert.deepEqual(intro.body, { active: false });
      }
    });
  });
}
