import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256 } from '../../src/platform/crypto.ts';
import { PASSWORD, startTestAuth, type TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
const KEYS = ['created_at', 'current', 'device', 'expires_at', 'id', 'ip', 'last_used_at', 'user_agent'];
const DAY = 86_400_000;

for (const kind of DB_KINDS) {
  describe(`the user's sessions: GET and DELETE /v1/sessions (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startTestAuth(kind);
    });
    after(() => auth.close());

    /** Signs in as a product does, passing the end user's address and user agent. */
    async function signIn(email: string, ip: string, userAgent: string): Promise<string> {
      const r = await auth.request('POST', '/v1/login', { body: { email, password: PASSWORD, ip, user_agent: userAgent } });
      assert.equal(r.status, 200, r.text);
      return r.body.session_token as string;
    }
    const list = (token: string) => auth.request('GET', '/v1/sessions', { token });
    const end = (token: string, id: string) => auth.request('DELETE', `/v1/sessions/${encodeURIComponent(id)}`, { token });
    const me = (token: string) => auth.request('GET', '/v1/me', { token });

    test('two sign-ins are listed, newest first, the current one marked; no token or hash in the reply', async () => {
      const { email } = await auth.verifiedAccount();
      const laptop = await signIn(email, '198.51.100.7', FIREFOX);
      auth.clock.advance(60_000);
      const phone = await signIn(email, '2001:db8::42', IPHONE);
      const signedInAt = auth.clock.now();

      const r = await list(laptop);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('cache-control'), 'no-store');
      assert.deepEqual(Object.keys(r.body), ['sessions']);
      const [first, second] = r.body.sessions;
      assert.equal(r.body.sessions.length, 2);
      assert.deepEqual(Object.keys(first).sort(), KEYS);
      assert.deepEqual(
        { device: first.device, user_agent: first.user_agent, ip: first.ip, current: first.current },
        { device: 'Safari on iPhone', user_agent: IPHONE, ip: '2001:db8::42', current: false },
      );
      assert.deepEqual(
        { device: second.device, user_agent: second.user_agent, ip: second.ip, current: second.current },
        { device: 'Firefox on Linux', user_agent: FIREFOX, ip: '198.51.100.7', current: true },
      );
      assert.equal(Date.parse(first.created_at), signedInAt);
      assert.equal(Date.parse(first.last_used_at), signedInAt, 'signing in is the first use');
      assert.equal(Date.parse(first.expires_at), signedInAt + 30 * DAY);

      // Asked with the other session, the other one is current.
      const fromPhone = await list(phone);
      assert.deepEqual(
        fromPhone.body.sessions.map((s: { current: boolean; device: string }) => [s.device, s.current]),
        [
          ['Safari on iPhone', true],
          ['Firefox on Linux', false],
        ],
      );
      for (const token of [laptop, phone]) {
        assert.ok(!r.text.includes(token) && !r.text.includes(sha256(token)), 'neither a token nor its hash is shown');
      }
      const ids = await auth.service.deps.db.selectFrom('sessions').select(['id', 'token_hash']).execute();
      for (const s of r.body.sessions) assert.ok(!ids.some((row) => row.token_hash === s.id), 'the id is not the stored hash');
    });

    test('last_used_at follows use, written at most once a minute', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await signIn(email, '198.51.100.8', FIREFOX);
      const signedInAt = auth.clock.now();
      const lastUsed = async () => Date.parse((await list(token)).body.sessions[0].last_used_at);

      auth.clock.advance(30_000);
      assert.equal((await me(token)).status, 200);
      assert.equal(await lastUsed(), signedInAt, 'half a minute later: not written again');
      auth.clock.advance(31_000);
      assert.equal((await me(token)).status, 200);
      assert.equal(await lastUsed(), signedInAt + 61_000, 'a minute later: written');
    });

    test('deleting another session signs that device out: /v1/me refuses it, the list drops it; deleting again is 204', async () => {
      const { email } = await auth.verifiedAccount();
      const mine = await signIn(email, '198.51.100.9', FIREFOX);
      const other = await signIn(email, '198.51.100.10', IPHONE);
      const otherId = (await list(mine)).body.sessions.find((s: { current: boolean }) => !s.current).id as string;

      const r = await end(mine, otherId);
      assert.equal(r.status, 204, r.text);
      assert.equal(r.text, '');
      const refused = await me(other);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.code, 'invalid_session');
      const left = (await list(mine)).body.sessions as { id: string; current: boolean }[];
      assert.deepEqual(left.map((s) => s.current), [true], 'only this device is left');
      assert.equal((await end(mine, otherId)).status, 204, 'again: 204');
      assert.equal((await me(mine)).status, 200, 'this device stays signed in');
    });

    test('deleting the current session signs this device out', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await signIn(email, '198.51.100.11', FIREFOX);
      const id = (await list(token)).body.sessions[0].id as string;
      assert.equal((await end(token, id)).status, 204);
      assert.equal((await me(token)).status, 401);
      assert.equal((await end(token, id)).status, 401, 'the signed-out session can no longer act');
    });

    test("another user's session can be neither seen nor deleted: the answer is the same 204 as for an unknown id", async () => {
      const alice = await signIn((await auth.verifiedAccount()).email, '198.51.100.12', FIREFOX);
      const bob = await signIn((await auth.verifiedAccount()).email, '198.51.100.13', IPHONE);
      const bobsId = (await list(bob)).body.sessions[0].id as string;

      const alices = await list(alice);
      assert.deepEqual(
        alices.body.sessions.map((s: { id: string }) => s.id).includes(bobsId),
        false,
        "Bob's session is not in Alice's list",
      );
      const unknown = await end(alice, '00000000-0000-4000-8000-000000000000');
      const foreign = await end(alice, bobsId);
      assert.deepEqual([foreign.status, foreign.text], [204, '']);
      assert.deepEqual([unknown.status, unknown.text], [204, ''], 'the same answer for an id that never existed');
      assert.equal((await me(bob)).status, 200, "Bob's session is untouched");
      assert.equal((await list(bob)).body.sessions.length, 1);
    });

    test('without a live session: 401 invalid_session; without the API key: 401 invalid_api_key; a malformed id: 400', async () => {
      for (const r of [await auth.request('GET', '/v1/sessions'), await list('ses_unknown'), await end('ses_unknown', 'x')]) {
        assert.equal(r.status, 401);
        assert.equal(r.body.code, 'invalid_session');
      }
      const token = await auth.login((await auth.verifiedAccount()).email);
      const noKey = await auth.request('GET', '/v1/sessions', { token, key: false });
      assert.equal(noKey.status, 401);
      assert.equal(noKey.body.code, 'invalid_api_key');
      for (const id of ['a'.repeat(65), 'a b', 'x\u0000y', "'; drop table sessions; --"]) {
        const r = await end(token, id);
        assert.equal(r.status, 400, id);
        assert.equal(r.body.code, 'validation_failed');
        assert.equal(r.body.errors[0].field, 'id');
      }
    });

    test('revoked and expired sessions are not listed', async () => {
      const { email } = await auth.verifiedAccount();
      const old = await signIn(email, '198.51.100.14', FIREFOX);
      auth.clock.advance(29 * DAY);
      const recent = await signIn(email, '198.51.100.15', IPHONE);
      const loggedOut = await signIn(email, '198.51.100.16', IPHONE);
      assert.equal((await auth.request('POST', '/v1/logout', { token: loggedOut })).status, 204);
      assert.equal((await list(recent)).body.sessions.length, 2);
      auth.clock.advance(DAY + 1000);
      assert.equal((await me(old)).status, 401);
      assert.deepEqual(
        (await list(recent)).body.sessions.map((s: { ip: string }) => s.ip),
        ['198.51.100.15'],
      );
    });

    test('the OpenAPI document describes the four endpoints', async () => {
      const doc = (await auth.request('GET', '/openapi.json')).body;
      assert.ok(doc.paths['/v1/sessions']?.get, 'GET /v1/sessions');
      assert.ok(doc.paths['/v1/sessions/{id}']?.delete, 'DELETE /v1/sessions/{id}');
      assert.ok(doc.paths['/v1/grants']?.get, 'GET /v1/grants');
      assert.ok(doc.paths['/v1/grants/{client_id}']?.delete, 'DELETE /v1/grants/{client_id}');
      const item = doc.paths['/v1/sessions'].get.responses['200'].content['application/json'].schema.properties.sessions.items;
      assert.deepEqual(Object.keys(item.properties).sort(), KEYS);
    });
  });
}
