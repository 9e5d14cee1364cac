import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as oauth from 'oauth4webapi';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import {
  authorizationUrl,
  Browser,
  clientOptions,
  discover,
  pkce,
  STATIC_CLIENT_ID,
  STATIC_CLIENT_SECRET,
  STATIC_REDIRECT,
  startOAuth,
} from '../helpers/oauth.ts';

const RESOURCE = 'https://messages.example/api';

const modes = [
  { name: 'public endpoints', publicEndpoints: true },
  { name: 'behind the edge (X-Api-Key)', publicEndpoints: false },
];

for (const kind of DB_KINDS) {
  for (const mode of modes) {
    describe(`OAuth flows with oauth4webapi (${kind}, ${mode.name})`, () => {
      const withKey = !mode.publicEndpoints;
      const opts = clientOptions(withKey);
      let auth: TestAuth;
      let as: oauth.AuthorizationServer;
      let user: { email: string; password: string };
      before(async () => {
        auth = await startOAuth(kind, { publicEndpoints: mode.publicEndpoints });
        as = await discover(auth, withKey);
        user = await auth.verifiedAccount();
      });
      after(() => auth.close());

      /** Authorization code flow for a public client; returns the token response. */
      async function codeFlow(client: oauth.Client, redirectUri: string, scope = 'identity msg:messages:read', clientAuth = oauth.None()) {
        const browser = new Browser(withKey);
        const { verifier, challenge } = await pkce();
        const state = oauth.generateRandomState();
        const url = authorizationUrl(as, {
          client_id: client.client_id,
          redirect_uri: redirectUri,
          response_type: 'code',
          scope,
          state,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          resource: RESOURCE,
        });
        const callback = await browser.authorize(url, user);
        const params = oauth.validateAuthResponse(as, client, callback, state); // checks iss (RFC 9207) and state
        const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, verifier, {
          ...opts,
          additionalParameters: { resource: RESOURCE },
        });
        return oauth.processAuthorizationCodeResponse(as, client, response);
      }

      const userinfo = async (client: oauth.Client, token: string) =>
        oauth.processUserInfoResponse(as, client, oauth.skipSubjectCheck, await oauth.userInfoRequest(as, client, token, opts));

      test('discovery describes the server (RFC 8414)', () => {
        assert.equal(as.issuer, auth.url);
        assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
        assert.deepEqual(as.response_types_supported, ['code']);
        assert.equal(as.authorization_response_iss_parameter_supported, true);
        assert.equal(as['client_id_metadata_document_supported'], true);
        assert.ok(as.scopes_supported?.includes('work:tasks:write'));
        assert.ok(as.registration_endpoint && as.revocation_endpoint && as.introspection_endpoint && as.userinfo_endpoint);
      });

      test('dynamic registration, PKCE code flow, userinfo, refresh rotation and reuse detection', async () => {
        const registered = await oauth.processDynamicClientRegistrationResponse(
          await oauth.dynamicClientRegistrationRequest(
            as,
            {
              redirect_uris: ['http://127.0.0.1:7777/cb'],
              client_name: 'Test Agent',
              application_type: 'native',
              token_endpoint_auth_method: 'client_secret_post',
            },
            opts,
          ),
        );
        assert.match(registered.client_id, /^svc_/);
        assert.equal(registered.token_endpoint_auth_method, 'none', 'a requested secret method is answered with none');
        assert.equal(registered['client_secret'], undefined);
        const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' };

        // Loopback redirect of a native client: another port than registered is accepted (RFC 8252 section 7.3).
        const tokens = await codeFlow(client, 'http://127.0.0.1:50123/cb');
        assert.match(tokens.access_token, /^oat_/);
        assert.match(tokens.refresh_token!, /^ort_/);
        assert.equal(tokens.expires_in, 3600);
        assert.equal(tokens.scope, 'identity msg:messages:read');

        const info = await userinfo(client, tokens.access_token);
        assert.equal(info.email, user.email);
        assert.equal(info['email_verified'], true);

        const refreshed = await oauth.processRefreshTokenResponse(
          as,
          client,
          await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts),
        );
        assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
        assert.equal((await userinfo(client, refreshed.access_token)).sub, info.sub);

        // Reusing the rotated token revokes the whole family.
        await assert.rejects(
          async () =>
            oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts)),
          (err: oauth.ResponseBodyError) => err.error === 'invalid_grant',
        );
        await assert.rejects(() => userinfo(client, refreshed.access_token), (err: oauth.WWWAuthenticateChallengeError) => err.status === 401);
        await assert.rejects(
          async () =>
            oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshed.refresh_token!, opts)),
          (err: oauth.ResponseBodyError) => err.error === 'invalid_grant',
        );
      });

      test('revocation of a refresh token ends its access tokens; introspection reports them (RFC 7009, RFC 7662)', async () => {
        const client: oauth.Client = { client_id: STATIC_CLIENT_ID };
        const secret = oauth.ClientSecretBasic(STATIC_CLIENT_SECRET);
        const tokens = await codeFlow(client, STATIC_REDIRECT, 'work:tasks:write', secret);

        const introspected = await oauth.processIntrospectionResponse(
          as,
          client,
          await oauth.introspectionRequest(as, client, secret, tokens.access_token, opts),
        );
        assert.equal(introspected.active, true);
        assert.equal(introspected.scope, 'work:tasks:write');
        assert.equal(introspected.client_id, STATIC_CLIENT_ID);
        assert.equal(introspected.aud, RESOURCE);
        assert.equal(introspected.token_type, 'Bearer', 'RFC 7662: the OAuth token type');
        assert.equal(introspected['token_kind'], 'access_token');
        assert.ok(introspected.exp! > Date.now() / 1000);

        await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, secret, tokens.refresh_token!, opts));
        const after = await oauth.processIntrospectionResponse(
          as,
          client,
          await oauth.introspectionRequest(as, client, secret, tokens.access_token, opts),
        );
        assert.equal(after.active, false);
        // Unknown tokens are 200 too.
        await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, secret, 'ort_unknown', opts));
      });

      test('the confidential client authenticates with client_secret_basic and client_secret_post', async () => {
        for (const method of [oauth.ClientSecretBasic(STATIC_CLIENT_SECRET), oauth.ClientSecretPost(STATIC_CLIENT_SECRET)]) {
          const client: oauth.Client = { client_id: STATIC_CLIENT_ID };
          const { verifier, challenge } = await pkce();
          const url = authorizationUrl(as, {
            client_id: STATIC_CLIENT_ID,
            redirect_uri: STATIC_REDIRECT,
            response_type: 'code',
            code_challenge: challenge,
            code_challenge_method: 'S256',
          });
          const callback = await new Browser(withKey).authorize(url, user);
          const params = oauth.validateAuthResponse(as, client, callback, oauth.expectNoState);
          const tokens = await oauth.processAuthorizationCodeResponse(
            as,
            client,
            await oauth.authorizationCodeGrantRequest(as, client, method, params, STATIC_REDIRECT, verifier, opts),
          );
          assert.equal(tokens.scope, 'identity', 'no scope asked: identity');
        }
        const wrong = oauth.ClientSecretBasic('not-the-secret-at-all');
        await assert.rejects(
          async () =>
            oauth.processRefreshTokenResponse(
              as,
              { client_id: STATIC_CLIENT_ID },
              await oauth.refreshTokenGrantRequest(as, { client_id: STATIC_CLIENT_ID }, wrong, 'ort_x', opts),
            ),
          (err: oauth.WWWAuthenticateChallengeError | oauth.ResponseBodyError) => err.status === 401,
        );
      });

      describe('a metadata-URL client (client ID metadata document)', () => {
        let server: Server;
        let clientId: string;
        before(async () => {
          server = createServer((req, res) => {
            if (req.url !== '/client.json') return res.writeHead(404).end();
            res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
            res.end(
              JSON.stringify({
                client_id: clientId,
                client_name: 'Metadata Agent',
                application_type: 'native',
                redirect_uris: ['http://127.0.0.1/cb'],
                token_endpoint_auth_method: 'none',
              }),
            );
          });
          await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
          clientId = `http://127.0.0.1:${(server.address() as AddressInfo).port}/client.json`;
        });
        after(() => new Promise<void>((resolve) => server.close(() => resolve())));

        test('completes the code flow, userinfo, refresh, reuse detection, introspection and revocation', async () => {
          const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' };
          const browser = new Browser(withKey);
          const { verifier, challenge } = await pkce();
          const url = authorizationUrl(as, {
            client_id: clientId,
            redirect_uri: 'http://127.0.0.1:40404/cb',
            response_type: 'code',
            code_challenge: challenge,
            code_challenge_method: 'S256',
            state: 'xyz',
          });
          const params = oauth.validateAuthResponse(as, client, await browser.authorize(url, user), 'xyz');
          const tokens = await oauth.processAuthorizationCodeResponse(
            as,
            client,
            await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, 'http://127.0.0.1:40404/cb', verifier, opts),
          );
          assert.equal((await userinfo(client, tokens.access_token)).email, user.email);
          const refreshed = await oauth.processRefreshTokenResponse(
            as,
            client,
            await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts),
          );
          assert.match(refreshed.access_token, /^oat_/);

          // The resource server's view (introspection by the confidential client).
          const rs: oauth.Client = { client_id: STATIC_CLIENT_ID };
          const rsAuth = oauth.ClientSecretBasic(STATIC_CLIENT_SECRET);
          const introspect = async (token: string) =>
            oauth.processIntrospectionResponse(as, rs, await oauth.introspectionRequest(as, rs, rsAuth, token, opts));
          const seen = await introspect(refreshed.access_token);
          assert.equal(seen.active, true);
          assert.equal(seen.client_id, clientId);

          // Reuse of the rotated refresh token revokes the family.
          await assert.rejects(
            async () =>
              oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts)),
            (err: oauth.ResponseBodyError) => err.error === 'invalid_grant',
          );
          assert.equal((await introspect(refreshed.access_token)).active, false);

          // A fresh authorization (consent remembered), then revocation by the metadata-URL client itself.
          const again = await new Browser(withKey).authorize(url.replace('state=xyz', 'state=abc'), user);
          const second = await oauth.processAuthorizationCodeResponse(
            as,
            client,
            await oauth.authorizationCodeGrantRequest(
              as,
              client,
              oauth.None(),
              oauth.validateAuthResponse(as, client, again, 'abc'),
              'http://127.0.0.1:40404/cb',
              verifier,
              opts,
            ),
          );
          await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), second.refresh_token!, opts));
          assert.equal((await introspect(second.access_token)).active, false);
        });
      });
    });
  }
}
