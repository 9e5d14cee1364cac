import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { pkce, STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { type AuthorizeParams, assertOAuthError, clientAuth, FORM, LOOPBACK_CB, RawOAuth, type Who } from '../helpers/oauth-raw.ts';

// RFC 9700 at the token endpoint: codes, PKCE, refresh rotation, scope, resource, response hygiene.

const MINUTE = 60_000;
const s256 = async () => ({ code_challenge: (await pkce()).challenge, code_challenge_method: 'S256' });
const RESOURCE = 'https://messages.example/api';

for (const kind of DB_KINDS) {
  describe(`RFC 9700: token endpoint (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let user: Who;
    let pub: AuthorizeParams;
    let other: AuthorizeParams;
    before(async () => {
      auth = await startOAuth(kind);
      raw = new RawOAuth(auth);
      user = await auth.verifiedAccount();
      pub = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB, scope: 'identity msg:messages:read' };
      other = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB };
    });
    after(() => auth.close());

    test('a wrong code_verifier is invalid_grant (and so is a missing one)', async () => {
      const { code, verifier } = await raw.code(user, pub);
      assertOAuthError(await raw.exchange(pub, code, (await pkce()).verifier), 400, 'invalid_grant');
      assertOAuthError(await raw.exchange(pub, code, undefined), 400, 'invalid_grant');
      assertOAuthError(await raw.exchange(pub, code, `${verifier}x`), 400, 'invalid_grant');
      assert.equal((await raw.exchange(pub, code, verifier)).status, 200, 'the code was not spent by the failures');
    });

    test('a code_verifier without a code_challenge (PKCE downgrade) is invalid_grant', async () => {
      const p = { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT, pkce: false };
      const { code } = await raw.code(user, p);
      assertOAuthError(await raw.exchange(p, code, (await pkce()).verifier), 400, 'invalid_grant');
    });

    test('a code used twice is invalid_grant and revokes every token issued from its first use', async () => {
      const { code, verifier } = await raw.code(user, pub);
      const first = await raw.exchange(pub, code, verifier);
      assert.equal(first.status, 200);
      const refreshed = await raw.refresh(pub.clientId, first.body.refresh_token);
      assert.equal((await raw.userinfo(refreshed.body.access_token)).status, 200);
      assertOAuthError(await raw.exchange(pub, code, verifier), 400, 'invalid_grant');
      assert.equal((await raw.userinfo(first.body.access_token)).status, 401);
      assert.equal((await raw.userinfo(refreshed.body.access_token)).status, 401);
      assertOAuthError(await raw.refresh(pub.clientId, refreshed.body.refresh_token), 400, 'invalid_grant');
    });

    test('client authentication: Basic failures carry a Basic challenge; two methods at once are refused', async () => {
      const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
      const wrong = await raw.token({ grant_type: 'refresh_token', refresh_token: 'ort_x' }, basic(STATIC_CLIENT_ID, 'wrong'));
      assertOAuthError(wrong, 401, 'invalid_client');
      assert.match(wrong.headers.get('www-authenticate') ?? '', /^Basic /);
      const both = await raw.token({ grant_type: 'refresh_token', refresh_token: 'ort_x', client_secret: 'x' }, basic(STATIC_CLIENT_ID, 'x'));
      assertOAuthError(both, 400, 'invalid_request');
      assertOAuthError(await raw.token({ grant_type: 'refresh_token', refresh_token: 'ort_x', client_id: pub.clientId, client_secret: 'guess' }), 401, 'invalid_client');
    });

    test("the refresh grant authenticates the client beside its own live token: a public client's secret, an unknown or deleted client_id are invalid_client", async () => {
      const t = await raw.tokens(user, pub);
      const withSecret = await raw.refresh(pub.clientId, t.refresh_token, { client_secret: 'guess' });
      assertOAuthError(withSecret, 401, 'invalid_client');
      assert.match(withSecret.body.error_description, /public and has no secret/);
      assertOAuthError(await raw.refresh('svc_unknown', t.refresh_token), 401, 'invalid_client');
      // Neither used up the token.
      assert.equal((await raw.refresh(pub.clientId, t.refresh_token)).status, 200);

      const gone = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB };
      const g = await raw.tokens(user, gone);
      await auth.service.deps.db.deleteFrom('oauth_clients').where('client_id', '=', gone.clientId).execute();
      const deleted = await raw.refresh(gone.clientId, g.refresh_token);
      assertOAuthError(deleted, 401, 'invalid_client');
      assert.match(deleted.body.error_description, /Unknown client/);
    });

    test("a code presented by another client is invalid_grant (and the issuing client's use still works)", async () => {
      const { code, verifier } = await raw.code(user, pub);
      assertOAuthError(await raw.exchange(other, code, verifier), 400, 'invalid_grant');
      assertOAuthError(await raw.exchange({ ...pub, clientId: STATIC_CLIENT_ID }, code, verifier), 400, 'invalid_grant');
      assert.equal((await raw.exchange(pub, code, verifier)).status, 200);
    });

    test('a redirect_uri other than the authorization request used is invalid_grant', async () => {
      const { code, verifier } = await raw.code(user, pub);
      for (const redirectUri of ['http://127.0.0.1:7778/cb', 'http://127.0.0.1:7777/cb/', '']) {
        assertOAuthError(await raw.exchange({ ...pub, redirectUri }, code, verifier), 400, 'invalid_grant');
      }
    });

    test('a code expires after 10 minutes', async () => {
      const { code, verifier } = await raw.code(user, pub);
      auth.clock.advance(11 * MINUTE);
      assertOAuthError(await raw.exchange(pub, code, verifier), 400, 'invalid_grant');
    });

    test('refresh rotates; reusing a rotated refresh token revokes the whole family', async () => {
      const t1 = await raw.tokens(user, pub);
      const r2 = await raw.refresh(pub.clientId, t1.refresh_token);
      assert.equal(r2.status, 200);
      assert.notEqual(r2.body.refresh_token, t1.refresh_token);
      assertOAuthError(await raw.refresh(pub.clientId, t1.refresh_token), 400, 'invalid_grant');
      assert.equal((await raw.userinfo(r2.body.access_token)).status, 401);
      assertOAuthError(await raw.refresh(pub.clientId, r2.body.refresh_token), 400, 'invalid_grant');
      // Another client presenting a live refresh token gets nowhere either.
      const t3 = await raw.tokens(user, pub);
      assertOAuthError(await raw.refresh(other.clientId, t3.refresh_token), 400, 'invalid_grant');
    });

    test('refresh may narrow the scope, never widen it; omitting scope gives the original grant back', async () => {
      const t = await raw.tokens(user, pub);
      assert.equal(t.scope, 'identity msg:messages:read');
      for (const scope of ['identity msg:messages:write', 'work:tasks:read', 'identity nonsense']) {
        assertOAuthError(await raw.refresh(pub.clientId, t.refresh_token, { scope }), 400, 'invalid_scope');
      }
      const narrow = await raw.refresh(pub.clientId, t.refresh_token, { scope: 'identity' });
      assert.equal(narrow.status, 200, narrow.text);
      assert.equal(narrow.body.scope, 'identity');
      assert.equal((await raw.introspect(narrow.body.access_token)).body.scope, 'identity');
      const back = await raw.refresh(pub.clientId, narrow.body.refresh_token);
      assert.equal(back.status, 200);
      assert.equal(back.body.scope, 'identity msg:messages:read');
      assert.equal((await raw.introspect(back.body.access_token)).body.scope, 'identity msg:messages:read');
    });

    test('RFC 8707: another resource than the authorized one is invalid_target', async () => {
      const p = { ...pub, resource: RESOURCE };
      const { code, verifier } = await raw.code(user, p);
      assertOAuthError(await raw.exchange(p, code, verifier, { resource: 'https://tasks.example/api' }), 400, 'invalid_target');
      const ok = await raw.exchange(p, code, verifier, { resource: RESOURCE });
      assert.equal(ok.status, 200);
      assertOAuthError(await raw.refresh(p.clientId, ok.body.refresh_token, { resource: 'https://tasks.example/api' }), 400, 'invalid_target');
      // A code authorized without a resource cannot gain one at the token endpoint.
      const plain = await raw.code(user, pub);
      assertOAuthError(await raw.exchange(pub, plain.code, plain.verifier, { resource: RESOURCE }), 400, 'invalid_target');
    });

    test('two concurrent refreshes with one refresh token: exactly one succeeds', async () => {
      const t = await raw.tokens(user, pub);
      const replies = await Promise.all([raw.refresh(pub.clientId, t.refresh_token), raw.refresh(pub.clientId, t.refresh_token)]);
      assert.deepEqual(replies.map((r) => r.status).sort(), [200, 400], replies.map((r) => r.text).join(' | '));
      assertOAuthError(replies.find((r) => r.status === 400)!, 400, 'invalid_grant');
    });

    test('two concurrent exchanges of one code: one wins, the other is a reuse and revokes its tokens', async () => {
      const { code, verifier } = await raw.code(user, pub);
      const replies = await Promise.all([raw.exchange(pub, code, verifier), raw.exchange(pub, code, verifier)]);
      assert.deepEqual(replies.map((r) => r.status).sort(), [200, 400], replies.map((r) => r.text).join(' | '));
      assertOAuthError(replies.find((r) => r.status === 400)!, 400, 'invalid_grant');
      const won = replies.find((r) => r.status === 200)!;
      assert.equal((await raw.userinfo(won.body.access_token)).status, 401);
    });

    test('duplicate parameters are invalid_request', async () => {
      const { code, verifier } = await raw.code(user, pub);
      const base: [string, string][] = [
        ['grant_type', 'authorization_code'],
        ['redirect_uri', pub.redirectUri],
        ['client_id', pub.clientId],
        ['code_verifier', verifier!],
      ];
      assertOAuthError(await raw.token([...base, ['code', code], ['code', code]]), 400, 'invalid_request');
      assertOAuthError(await raw.token([...base, ['code', code], ['grant_type', 'refresh_token']]), 400, 'invalid_request');
      assert.equal((await raw.token([...base, ['code', code]])).status, 200, 'the code survived the refused requests');
    });

    test('every token response is Cache-Control: no-store; every error is {error, error_description}', async () => {
      const t = await raw.tokens(user, pub);
      const ok = await raw.refresh(pub.clientId, t.refresh_token);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('cache-control'), 'no-store');
      assert.equal(ok.headers.get('pragma'), 'no-cache');
      assert.deepEqual(Object.keys(ok.body).sort(), ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
      assert.equal(ok.body.token_type, 'Bearer');

      assertOAuthError(await raw.token({ grant_type: 'password', ...clientAuth(pub.clientId) }), 400, 'unsupported_grant_type');
      assertOAuthError(await raw.token({ ...clientAuth(pub.clientId) }), 400, 'invalid_request');
      assertOAuthError(await raw.token({ grant_type: 'authorization_code', ...clientAuth(pub.clientId) }), 400, 'invalid_request');
      assertOAuthError(await raw.token({ grant_type: 'refresh_token', client_id: 'svc_nobody', refresh_token: 'ort_x' }), 401, 'invalid_client');
      assertOAuthError(await raw.token({ grant_type: 'refresh_token', client_id: STATIC_CLIENT_ID, client_secret: 'wrong', refresh_token: 'ort_x' }), 401, 'invalid_client');
      assertOAuthError(await raw.token({ grant_type: 'refresh_token', refresh_token: 'ort_x' }), 401, 'invalid_client');
      assertOAuthError(await raw.refresh(pub.clientId, 'ort_unknown'), 400, 'invalid_grant');
      // Revocation and introspection errors have the same shape.
      assertOAuthError(await raw.post('/oauth/revoke', { client_id: pub.clientId }), 400, 'invalid_request');
      assertOAuthError(await raw.post('/oauth/revoke', { token: 'x' }), 401, 'invalid_client');
      assertOAuthError(await raw.post('/oauth/introspect', { token: 'x', client_id: pub.clientId }), 401, 'invalid_client');
    });

    // Errors raised before the route runs (body parsing, content type) are RFC 6749 errors too.
    test('errors from body parsing are RFC 6749 errors too, never cached', async () => {
      const problems: string[] = [];
      for (const [type, rawBody] of [
        ['application/json', '{"grant_type":'],
        ['text/plain', 'grant_type=refresh_token'],
        ['application/json', '{"grant_type":"refresh_token","refresh_token":"ort_x"}'], // RFC 6749 section 3.2: forms only
        [FORM, `a=${'x'.repeat(70_000)}`],
      ] as const) {
        const r = await auth.request('POST', '/oauth/token', { rawBody, headers: { 'content-type': type }, key: false });
        assert.ok(r.status >= 400 && r.status < 500, r.text);
        assert.deepEqual(Object.keys(r.body).sort(), ['error', 'error_description']);
        assert.equal(r.body.error, 'invalid_request');
        if (r.headers.get('cache-control') !== 'no-store') problems.push(`${type}: no Cache-Control: no-store`);
        if (/application\/json/.test(r.body.error_description)) problems.push(`${type}: "${r.body.error_description}"`);
      }
      assert.deepEqual(problems, []);
    });

    // RFC 6749 sections 4.1.2.1 and 5.2 limit error_description to %x20-21 / %x23-5B / %x5D-7E.
    test('error_description uses only the characters RFC 6749 allows', async () => {
      const t = await raw.tokens(user, pub);
      const authorize = await raw.browser(user).request(
        raw.authorizeUrl({ client_id: pub.clientId, redirect_uri: LOOPBACK_CB, response_type: 'code', scope: 'caf\u00e9', ...(await s256()) }),
      );
      const descriptions: string[] = [
        (await raw.refresh(pub.clientId, t.refresh_token, { scope: 'identity unknown-scope' })).body.error_description,
        (await raw.token([['grant_type', 'refresh_token'], ['grant_type', 'refresh_token'], ['client_id', pub.clientId]])).body.error_description,
        (await raw.register({ redirect_uris: ['http://attacker.example/cb'] })).body.error_description,
        (await raw.register({ redirect_uris: [LOOPBACK_CB], application_type: 'desktop' })).body.error_description,
        new URL(authorize.location!).searchParams.get('error_description')!,
      ];
      assert.deepEqual(descriptions.filter((d) => !/^[\x20\x21\x23-\x5b\x5d-\x7e]+$/.test(d)), []);
    });
  });

  describe(`refresh reuse grace window: OAUTH_REFRESH_REUSE_GRACE_SECONDS=30 (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let user: Who;
    let pub: AuthorizeParams;
    before(async () => {
      auth = await startOAuth(kind, { env: { OAUTH_REFRESH_REUSE_GRACE_SECONDS: '30' } });
      raw = new RawOAuth(auth);
      user = await auth.verifiedAccount();
      pub = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB };
    });
    after(() => auth.close());

    test('within 30 s the rotated token gets the same successors; after it, reuse revokes the family', async () => {
      const t = await raw.tokens(user, pub);
      const first = await raw.refresh(pub.clientId, t.refresh_token);
      assert.equal(first.status, 200);
      auth.clock.advance(29_000);
      const again = await raw.refresh(pub.clientId, t.refresh_token);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.refresh_token, first.body.refresh_token);
      assert.equal(again.body.access_token, first.body.access_token);
      assert.equal(again.headers.get('cache-control'), 'no-store');
      assert.equal((await raw.userinfo(first.body.access_token)).status, 200, 'the successor is still live');

      auth.clock.advance(2_000);
      assertOAuthError(await raw.refresh(pub.clientId, t.refresh_token), 400, 'invalid_grant');
      assert.equal((await raw.userinfo(first.body.access_token)).status, 401);
      assertOAuthError(await raw.refresh(pub.clientId, first.body.refresh_token), 400, 'invalid_grant');
    });

    test('within the window, once the successor itself was used, the old token revokes the family', async () => {
      const t = await raw.tokens(user, pub);
      const first = await raw.refresh(pub.clientId, t.refresh_token);
      const second = await raw.refresh(pub.clientId, first.body.refresh_token);
      assert.equal(second.status, 200);
      assertOAuthError(await raw.refresh(pub.clientId, t.refresh_token), 400, 'invalid_grant');
      assert.equal((await raw.userinfo(second.body.access_token)).status, 401);
    });

    test('two concurrent refreshes both get the same successor', async () => {
      const t = await raw.tokens(user, pub);
      const [a, b] = await Promise.all([raw.refresh(pub.clientId, t.refresh_token), raw.refresh(pub.clientId, t.refresh_token)]);
      assert.equal(a!.status, 200, a!.text);
      assert.equal(b!.status, 200, b!.text);
      assert.equal(a!.body.refresh_token, b!.body.refresh_token);
    });
  });
}
