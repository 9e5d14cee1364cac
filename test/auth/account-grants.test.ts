import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { assertOAuthError, authorizeParams, LOOPBACK_CB, RawOAuth, startDocServer, type Who } from '../helpers/oauth-raw.ts';

const KEYS = ['client_host', 'client_id', 'client_name', 'granted_at', 'last_used_at', 'scope'];
const STATIC = { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT, scope: 'identity msg:messages:read' };

for (const kind of DB_KINDS) {
  describe(`the user's OAuth grants: GET and DELETE /v1/grants (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let docs: Awaited<ReturnType<typeof startDocServer>>;
    before(async () => {
      auth = await startOAuth(kind);
      raw = new RawOAuth(auth);
      docs = await startDocServer((req, res, base) => {
        if (req.url !== '/app') return void res.writeHead(404).end();
        const doc = { client_id: `${base}/app`, client_name: 'Metadata App', client_uri: 'https://app.example', redirect_uris: ['http://127.0.0.1/cb'] };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
      });
    });
    after(async () => {
      await docs.close();
      await auth.close();
    });

    /** A fresh verified user, and a session of theirs as a product holds it. */
    async function user(): Promise<{ who: Who; session: string }> {
      const who = await auth.verifiedAccount();
      return { who, session: await auth.login(who.email) };
    }
    const list = (session: string) => auth.request('GET', '/v1/grants', { token: session });
    const revoke = (session: string, clientId: string) => auth.request('DELETE', `/v1/grants/${encodeURIComponent(clientId)}`, { token: session });
    const names = async (session: string) => (await list(session)).body.grants.map((g: { client_id: string }) => g.client_id);

    /** Where the user's browser goes on a fresh authorization request of the static client: the consent page, or straight back with a code. */
    async function authorizeAgain(who: Who): Promise<string> {
      const r = await raw.browser(who).request(raw.authorizeUrl({ ...(await authorizeParams(STATIC_CLIENT_ID, STATIC_REDIRECT)), scope: STATIC.scope }));
      assert.equal(r.status, 302, r.text);
      const location = new URL(r.location!);
      return location.origin === auth.url ? location.pathname : `${location.origin}${location.pathname}`;
    }

    test('no grants before any consent', async () => {
      const { session } = await user();
      const r = await list(session);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { grants: [] });
      assert.equal(r.headers.get('cache-control'), 'no-store');
    });

    test('after consent: each client with its name, host, scopes, when granted and when last used (a refresh counts)', async () => {
      const { who, session } = await user();
      const grantedStatic = auth.clock.now();
      const tokens = await raw.tokens(who, STATIC);
      auth.clock.advance(60_000);
      const registered = await raw.publicClient([LOOPBACK_CB]);
      const grantedRegistered = auth.clock.now();
      await raw.tokens(who, { clientId: registered, redirectUri: LOOPBACK_CB, scope: 'work:tasks:write' });

      const r = await list(session);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(Object.keys(r.body.grants[0]).sort(), KEYS);
      assert.deepEqual(r.body.grants, [
        {
          client_id: registered,
          client_name: 'Raw test client',
          client_host: '127.0.0.1:7777',
          scope: 'work:tasks:write',
          granted_at: new Date(grantedRegistered).toISOString(),
          last_used_at: new Date(grantedRegistered).toISOString(),
        },
        {
          client_id: STATIC_CLIENT_ID,
          client_name: 'product.example',
          client_host: 'product.example',
          scope: 'identity msg:messages:read',
          granted_at: new Date(grantedStatic).toISOString(),
          last_used_at: new Date(grantedStatic).toISOString(),
        },
      ]);

      auth.clock.advance(120_000);
      assert.equal((await raw.refresh(STATIC_CLIENT_ID, tokens.refresh_token)).status, 200);
      const refreshed = (await list(session)).body.grants.find((g: { client_id: string }) => g.client_id === STATIC_CLIENT_ID);
      assert.equal(refreshed.last_used_at, new Date(auth.clock.now()).toISOString(), 'a refresh is a use');
      assert.equal(refreshed.granted_at, new Date(grantedStatic).toISOString());
    });

    test('revoking a grant refuses its access and refresh tokens at once and asks for consent again; other clients and users keep theirs', async () => {
      const alice = await user();
      const bob = await user();
      const aliceStatic = await raw.tokens(alice.who, STATIC);
      const registered = await raw.publicClient([LOOPBACK_CB]);
      const aliceOther = await raw.tokens(alice.who, { clientId: registered, redirectUri: LOOPBACK_CB });
      const bobStatic = await raw.tokens(bob.who, STATIC);
      assert.equal(await authorizeAgain(alice.who), STATIC_REDIRECT, 'consent remembered: straight back to the client');

      const r = await revoke(alice.session, STATIC_CLIENT_ID);
      assert.equal(r.status, 204, r.text);
      assert.equal(r.text, '');

      assertOAuthError(await raw.userinfo(aliceStatic.access_token), 401, 'invalid_token');
      assert.deepEqual((await raw.introspect(aliceStatic.access_token)).body, { active: false });
      assertOAuthError(await raw.refresh(STATIC_CLIENT_ID, aliceStatic.refresh_token), 400, 'invalid_grant');
      assert.equal(await authorizeAgain(alice.who), '/oauth/consent', 'the consent is asked again');

      assert.equal((await raw.userinfo(aliceOther.access_token)).status, 200, "the user's other application keeps its access");
      assert.equal((await raw.userinfo(bobStatic.access_token)).status, 200, "another user's grant of the same client is untouched");
      assert.equal((await raw.introspect(bobStatic.access_token)).body.active, true);
      assert.deepEqual(await names(alice.session), [registered]);
      assert.deepEqual(await names(bob.session), [STATIC_CLIENT_ID]);

      assert.equal((await revoke(alice.session, STATIC_CLIENT_ID)).status, 204, 'again: 204');
      assert.equal((await revoke(alice.session, 'svc_never_registered')).status, 204, 'a client never granted: 204 too');
    });

    test('an unused authorization code of the client is deleted with the grant', async () => {
      const { who, session } = await user();
      const { code, verifier } = await raw.code(who, STATIC);
      assert.equal((await revoke(session, STATIC_CLIENT_ID)).status, 204);
      const r = await raw.exchange(STATIC, code, verifier);
      assertOAuthError(r, 400, 'invalid_grant');
      assert.equal(r.body.error_description, 'The authorization code is invalid.', 'gone, not merely refused for another reason');
    });

    test('a metadata-URL client: named as its consent page showed it, at its URL host; its percent-encoded client_id revokes it', async () => {
      const { who, session } = await user();
      const clientId = `${docs.base}/app`;
      const p = { clientId, redirectUri: 'http://127.0.0.1/cb' };
      const tokens = await raw.tokens(who, p);
      const [grant] = (await list(session)).body.grants;
      assert.equal(grant.client_id, clientId);
      assert.equal(grant.client_name, 'Metadata App');
      assert.equal(grant.client_host, new URL(docs.base).host);

      assert.equal((await revoke(session, clientId)).status, 204);
      assert.deepEqual(await names(session), []);
      assertOAuthError(await raw.userinfo(tokens.access_token), 401, 'invalid_token');
    });

    test('live tokens without a consent row (consents dropped by migration 0009) are listed and revocable', async () => {
      const { who, session } = await user();
      const tokens = await raw.tokens(who, STATIC);
      const userId = (await raw.introspect(tokens.access_token)).body.sub as string;
      await auth.service.deps.db.deleteFrom('oauth_consents').where('user_id', '=', userId).execute();
      const family = await auth.service.deps.db.selectFrom('oauth_families').select('created_at').where('user_id', '=', userId).executeTakeFirstOrThrow();

      const [grant] = (await list(session)).body.grants;
      assert.equal(grant.client_id, STATIC_CLIENT_ID);
      assert.equal(grant.granted_at, new Date(family.created_at).toISOString(), 'granted when its tokens were first issued');
      assert.equal((await revoke(session, STATIC_CLIENT_ID)).status, 204);
      assertOAuthError(await raw.userinfo(tokens.access_token), 401, 'invalid_token');
      assert.deepEqual(await names(session), []);
    });

    test('without a live session: 401 invalid_session; a client_id over 2048 characters or with control characters: 400', async () => {
      for (const r of [await auth.request('GET', '/v1/grants'), await list('ses_unknown'), await revoke('ses_unknown', STATIC_CLIENT_ID)]) {
        assert.equal(r.status, 401);
        assert.equal(r.body.code, 'invalid_session');
      }
      const { session } = await user();
      for (const clientId of [`https://app.example/${'a'.repeat(2029)}`, 'svc_\u0000x', 'svc_\nx']) {
        const r = await revoke(session, clientId);
        assert.equal(r.status, 400, JSON.stringify(clientId));
        assert.equal(r.body.code, 'validation_failed');
      }
      // A metadata-URL client_id of 2048 characters (well over the router's default bound of 100) is revocable.
      assert.equal((await revoke(session, `https://app.example/${'a'.repeat(2028)}`)).status, 204);
    });
  });
}
