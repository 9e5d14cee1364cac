import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, STATIC_CLIENT_ID, startOAuth } from '../helpers/oauth.ts';
import { assertErrorPage, assertOAuthError, authorizeParams, RawOAuth, startDocServer, type Who } from '../helpers/oauth-raw.ts';

// Item 11 and defect 6: what a client may register, and how the service holds it to it.

for (const kind of DB_KINDS) {
  describe(`client rules (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let user: Who;
    before(async () => {
      auth = await startOAuth(kind, { env: { OAUTH_LIMIT_REGISTRATION: '1000/3600' } });
      raw = new RawOAuth(auth);
      user = await auth.verifiedAccount();
    });
    after(() => auth.close());

    /** The authorization request's first answer: 302 to the login page when the redirect URI matched. */
    const authorize = async (clientId: string, redirectUri: string) =>
      new Browser(false).request(raw.authorizeUrl(await authorizeParams(clientId, redirectUri)));
    const accepted = async (clientId: string, redirectUri: string) => {
      const r = await authorize(clientId, redirectUri);
      assert.equal(r.status, 302, `${redirectUri}: ${r.text.slice(0, 200)}`);
      assert.equal(new URL(r.location!).pathname, '/oauth/login', redirectUri);
    };
    const refused = async (clientId: string, redirectUri: string) => {
      const r = await authorize(clientId, redirectUri);
      assertErrorPage(r);
      assert.match(r.text, /redirect_uri is not registered/, redirectUri);
    };

    describe('hosts a Content-Security-Policy cannot carry', () => {
      const hostile = [
        'https://app.example;script-src-elem/cb',
        'https://a;b.example/cb',
        'https://a,b.example/cb',
        "https://a'b.example/cb",
        'https://*.example/cb',
        'https://under_score.example/cb',
      ];

      test('are refused at registration and in metadata documents', async () => {
        for (const uri of hostile) {
          assert.ok(URL.canParse(uri), `the URL parser lets ${uri} through`);
          const r = await raw.register({ redirect_uris: [uri] });
          assertOAuthError(r, 400, 'invalid_redirect_uri');
          assert.match(r.body.error_description, /letters, digits/, uri);
        }
        const docs = await startDocServer((req, res, base) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ client_id: `${base}${req.url}`, redirect_uris: ['https://a;b.example/cb'] }));
        });
        try {
          const r = await authorize(`${docs.base}/client.json`, 'https://a;b.example/cb');
          assertErrorPage(r);
          assert.doesNotMatch(r.headers.get('content-security-policy')!, /a;b/);
        } finally {
          await docs.close();
        }
      });

      test('a registration stored under the older rules never reaches the header: error page, policy intact', async () => {
        const clientId = `svc_legacy${kind}`;
        await auth.service.deps.db
          .insertInto('oauth_clients')
          .values({
            client_id: clientId,
            client_name: null,
            client_uri: null,
            logo_uri: null,
            redirect_uris: JSON.stringify([hostile[0]]),
            application_type: 'web',
            scope: null,
            created_at: Date.now(),
            last_token_at: null,
            grant_types: JSON.stringify(['authorization_code', 'refresh_token']),
          })
          .execute();
        const r = await authorize(clientId, hostile[0]!);
        assertErrorPage(r);
        assert.equal(
          r.headers.get('content-security-policy'),
          "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        );
      });

      test("a valid client's pages list exactly its origin in form-action", async () => {
        const uri = 'https://app.example:8443/cb?x=1';
        const clientId = await raw.publicClient([uri]);
        const browser = new Browser(false);
        const start = await browser.request(raw.authorizeUrl(await authorizeParams(clientId, uri)));
        const page = await browser.request(start.location!);
        assert.equal(page.status, 200);
        assert.match(page.headers.get('content-security-policy')!, /; form-action 'self' https:\/\/app\.example:8443; frame-ancestors/);
      });
    });

    describe('loopback redirect URIs (RFC 8252 sections 7.3 and 8.3)', () => {
      test('a native client may vary the port at 127.0.0.1 and [::1], nothing else', async () => {
        const v4 = await raw.publicClient(['http://127.0.0.1:7777/cb'], { application_type: 'native' });
        await accepted(v4, 'http://127.0.0.1:7777/cb');
        await accepted(v4, 'http://127.0.0.1:50123/cb');
        await accepted(v4, 'http://127.0.0.1/cb');
        await refused(v4, 'http://127.0.0.1:50123/other');
        await refused(v4, 'http://127.0.0.1:50123/cb?x=1');
        await refused(v4, 'http://[::1]:50123/cb');
        await refused(v4, 'http://localhost:50123/cb');

        const v6 = await raw.publicClient(['http://[::1]:9000/cb'], { application_type: 'native' });
        await accepted(v6, 'http://[::1]:9001/cb');
        await refused(v6, 'http://127.0.0.1:9001/cb');
      });

      test('localhost matches exactly, even for a native client', async () => {
        const native = await raw.publicClient(['http://localhost:7777/cb'], { application_type: 'native' });
        await accepted(native, 'http://localhost:7777/cb');
        await refused(native, 'http://localhost:7778/cb');
        await refused(native, 'http://localhost/cb');
      });

      test('a web client matches exactly, loopback included', async () => {
        const web = await raw.publicClient(['http://127.0.0.1:7777/cb']);
        await accepted(web, 'http://127.0.0.1:7777/cb');
        await refused(web, 'http://127.0.0.1:7778/cb');
        await refused(web, 'http://127.0.0.1/cb');
      });

      test('the static confidential client is a web client: its loopback URI matches exactly', async () => {
        const browser = new Browser(false);
        const exact = await browser.request(raw.authorizeUrl({ client_id: STATIC_CLIENT_ID, redirect_uri: 'http://127.0.0.1/callback', response_type: 'code' }));
        assert.equal(exact.status, 302);
        const other = await browser.request(raw.authorizeUrl({ client_id: STATIC_CLIENT_ID, redirect_uri: 'http://127.0.0.1:5555/callback', response_type: 'code' }));
        assertErrorPage(other);
      });
    });

    describe('registered grant types are enforced (RFC 7591 section 2, RFC 6749 section 5.2)', () => {
      test('a client registered with only authorization_code gets no refresh token, and the refresh grant is refused', async () => {
        const r = await raw.register({ redirect_uris: ['http://127.0.0.1:7777/cb'], grant_types: ['authorization_code', 'authorization_code'] });
        assert.equal(r.status, 201, r.text);
        assert.deepEqual(r.body.grant_types, ['authorization_code']);
        const p = { clientId: r.body.client_id as string, redirectUri: 'http://127.0.0.1:7777/cb' };
        const { code, verifier } = await raw.code(user, p);
        const tokens = await raw.exchange(p, code, verifier);
        assert.equal(tokens.status, 200, tokens.text);
        assert.match(tokens.body.access_token, /^oat_/);
        assert.equal('refresh_token' in tokens.body, false, tokens.text);
        assert.equal((await raw.userinfo(tokens.body.access_token)).status, 200);

        const refresh = await raw.refresh(p.clientId, 'ort_anything');
        assertOAuthError(refresh, 400, 'unauthorized_client');
        assert.match(refresh.body.error_description, /did not register the refresh_token grant/);
      });

      test('the default is both grants, and the refresh token works', async () => {
        const r = await raw.register({ redirect_uris: ['http://127.0.0.1:7777/cb'] });
        assert.deepEqual(r.body.grant_types, ['authorization_code', 'refresh_token']);
        const tokens = await raw.tokens(user, { clientId: r.body.client_id, redirectUri: 'http://127.0.0.1:7777/cb' });
        assert.equal((await raw.refresh(r.body.client_id, tokens.refresh_token)).status, 200);
      });

      test("a metadata document's grant_types hold too", async () => {
        const docs = await startDocServer((req, res, base) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ client_id: `${base}${req.url}`, redirect_uris: ['http://127.0.0.1:7777/cb'], grant_types: ['authorization_code'] }));
        });
        try {
          const p = { clientId: `${docs.base}/client.json`, redirectUri: 'http://127.0.0.1:7777/cb' };
          const { code, verifier } = await raw.code(user, p);
          const tokens = await raw.exchange(p, code, verifier);
          assert.equal(tokens.status, 200, tokens.text);
          assert.equal('refresh_token' in tokens.body, false);
          // It holds no refresh token to present; any other is refused before its document is even fetched.
          const fetched = docs.seen.length;
          assertOAuthError(await raw.refresh(p.clientId, 'ort_anything'), 400, 'invalid_grant');
          assert.equal(docs.seen.length, fetched);
        } finally {
          await docs.close();
        }
      });

      test('a client registered before grant types were stored keeps both (migration default)', async () => {
        const clientId = `svc_before${kind}`;
        await sql`insert into oauth_clients (client_id, redirect_uris, application_type, created_at)
                  values (${clientId}, ${JSON.stringify(['http://127.0.0.1:7777/cb'])}, 'web', ${Date.now()})`.execute(auth.service.deps.db);
        const tokens = await raw.tokens(user, { clientId, redirectUri: 'http://127.0.0.1:7777/cb' });
        assert.equal((await raw.refresh(clientId, tokens.refresh_token)).status, 200);
      });
    });

    describe('bounded client metadata (defect 6)', () => {
      const uri = (length: number) => {
        const base = 'https://app.example/';
        return base + 'a'.repeat(length - base.length);
      };

      test('at most 10 redirect URIs of at most 512 characters', async () => {
        const ten = Array.from({ length: 10 }, (_, i) => `https://app.example/cb${i}`);
        assert.equal((await raw.register({ redirect_uris: ten })).status, 201);
        const eleven = await raw.register({ redirect_uris: [...ten, 'https://app.example/cb10'] });
        assertOAuthError(eleven, 400, 'invalid_redirect_uri');
        assert.match(eleven.body.error_description, /1 to 10 URIs/);
        assert.equal((await raw.register({ redirect_uris: [uri(512)] })).status, 201);
        const long = await raw.register({ redirect_uris: [uri(513)] });
        assertOAuthError(long, 400, 'invalid_redirect_uri');
        assert.match(long.body.error_description, /longer than 512 characters/);
      });

      test('client_name 100, client_uri 512, scope 256 characters', async () => {
        const base = { redirect_uris: ['https://app.example/cb'] };
        assert.equal((await raw.register({ ...base, client_name: 'n'.repeat(100), client_uri: uri(512) })).status, 201);
        for (const [field, value] of [
          ['client_name', 'n'.repeat(101)],
          ['client_uri', uri(513)],
          ['scope', `identity${' identity'.repeat(28)}`],
        ] as const) {
          const r = await raw.register({ ...base, [field]: value });
          assertOAuthError(r, 400, 'invalid_client_metadata');
          assert.match(r.body.error_description, new RegExp(`${field} must be a string of at most`));
        }
      });

      test('unknown fields are ignored and not echoed, but the whole metadata is bounded to 16 KB', async () => {
        const base = { redirect_uris: ['https://app.example/cb'], software_id: 'agent', contacts: ['ops@app.example'] };
        const ok = await raw.register({ ...base, padding: 'x'.repeat(15_000) });
        assert.equal(ok.status, 201, ok.text);
        assert.equal(ok.body.padding, undefined);
        assert.equal(ok.body.software_id, undefined);
        const big = await raw.register({ ...base, padding: 'x'.repeat(17_000) });
        assertOAuthError(big, 400, 'invalid_client_metadata');
        assert.match(big.body.error_description, /at most 16384 characters/);
      });
    });
  });
}
