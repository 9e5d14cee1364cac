import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, pkce, startOAuth } from '../helpers/oauth.ts';
import { assertOAuthError, RawOAuth, type Who } from '../helpers/oauth-raw.ts';
import { reset, resetToken } from '../helpers/recovery.ts';

const OWNER_PASSWORD = 'the owner of this mailbox 1';
// An https redirect: remembered consent is never used for loopback ones (RFC 8252 section 8.6).
const CALLBACK = 'https://app.example/cb';

for (const kind of DB_KINDS) {
  describe(`password reset and what was issued before it (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let clientId: string;
    before(async () => {
      auth = await startOAuth(kind, { env: { AUTH_LIMIT_FORGOT_PER_EMAIL: '100/3600', AUTH_LIMIT_FORGOT: '1000/3600' } });
      raw = new RawOAuth(auth);
      clientId = await raw.publicClient([CALLBACK]);
    });
    after(() => auth.close());

    const params = () => ({ clientId, redirectUri: CALLBACK, scope: 'identity' });
    const loginStatus = async (email: string, password: string) =>
      (await auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.9' } })).status;
    const setVerified = (email: string, verified: boolean) =>
      auth.service.deps.db.updateTable('users').set({ email_verified_at: verified ? auth.clock.now() : null }).where('email', '=', email).execute();

    async function authorizeUrl(): Promise<string> {
      const { challenge } = await pkce();
      return raw.authorizeUrl({
        client_id: clientId,
        redirect_uri: CALLBACK,
        response_type: 'code',
        scope: 'identity',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
    }

    /** Where a browser's authorization request goes first: the login page, the consent page or back to the app. */
    async function firstStep(browser: Browser): Promise<string> {
      const r = await browser.request(await authorizeUrl());
      assert.ok(r.status === 302 || r.status === 303, `${r.status} ${r.text.slice(0, 200)}`);
      const to = new URL(r.location!);
      return to.origin === auth.url ? to.pathname : 'application';
    }

    /** A session, a personal access token, OAuth tokens, a remembered consent and an unused code, all through the app. */
    async function everythingFor(who: Who) {
      const session = await auth.login(who.email, who.password);
      const pat = await auth.request('POST', '/v1/tokens', { token: session, body: { name: 'agent' } });
      assert.equal(pat.status, 201, pat.text);
      const tokens = await raw.tokens(who, params());
      const unused = await raw.code(who, params());
      assert.equal(await firstStep(raw.browser(who)), 'application', 'signed in, consent remembered');
      return { session, pat: pat.body.token as string, tokens, unused };
    }

    test("pre-account hijacking: a squatter's unverified account keeps neither its password nor anything issued to it", async () => {
      const victim = uniqueEmail();
      const squatter: Who = { email: victim, password: 'the squatter chose this one' };
      const registered = await auth.request('POST', '/v1/register', { body: { email: victim, password: squatter.password, ip: '203.0.113.66' } });
      assert.equal(registered.status, 201);
      assert.equal(await loginStatus(victim, squatter.password), 403, 'unverified: sign-in refused');

      // Sign-in refuses unverified accounts, so to give the squatter real credentials the address is marked
      // verified while they obtain them through the app, then unverified again: the state any path that hands
      // out credentials before verification (a product's own sign-in, a future flaw) would leave behind.
      await setVerified(victim, true);
      const held = await everythingFor(squatter);
      await setVerified(victim, false);

      // The owner of the mailbox asks for a reset and chooses a password.
      const token = await resetToken(auth, victim);
      const r = await reset(auth, token, OWNER_PASSWORD);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.user.email_verified, true);

      assert.equal(await loginStatus(victim, squatter.password), 401, "the squatter's password is gone");
      assert.equal((await auth.request('GET', '/v1/me', { token: held.session })).status, 401, "the squatter's session is revoked");
      assert.equal((await raw.userinfo(held.pat)).status, 401, "the squatter's personal access token is revoked");
      assert.equal((await raw.userinfo(held.tokens.access_token)).status, 401, "the squatter's access token is revoked");
      assertOAuthError(await raw.refresh(clientId, held.tokens.refresh_token), 400, 'invalid_grant');
      assertOAuthError(await raw.exchange(params(), held.unused.code, held.unused.verifier), 400, 'invalid_grant');
      assert.equal(await firstStep(raw.browser(squatter)), '/oauth/login', "the squatter's browser session is revoked");

      // The owner signs in; the squatter's consent is not theirs, so the consent page is shown.
      const owner = await auth.login(victim, OWNER_PASSWORD);
      assert.deepEqual((await auth.request('GET', '/v1/tokens', { token: owner })).body.tokens, []);
      const browser = new Browser(false);
      assert.equal(await firstStep(browser), '/oauth/login');
      const start = await browser.request(await authorizeUrl());
      const page = await browser.request(start.location!);
      const signedIn = await browser.request(`${auth.url}/oauth/login`, {
        form: { ...Browser.fields(page.text), email: victim, password: OWNER_PASSWORD },
      });
      assert.equal(new URL(signedIn.location!).pathname, '/oauth/consent');
    });

    test('a reset of a verified account signs out every session, the OAuth browser session included; tokens the owner issued stay', async () => {
      const user: Who = { email: (await auth.verifiedAccount()).email, password: PASSWORD };
      const held = await everythingFor(user);

      const token = await resetToken(auth, user.email);
      assert.equal((await reset(auth, token, OWNER_PASSWORD)).status, 200);

      assert.equal((await auth.request('GET', '/v1/me', { token: held.session })).status, 401);
      assert.equal(await firstStep(raw.browser(user)), '/oauth/login', 'the authorize flow asks to sign in again');
      // A verified owner made these; they are listed and revoked one by one (GET/DELETE /v1/tokens, /oauth/revoke).
      assert.equal((await raw.userinfo(held.pat)).status, 200);
      assert.equal((await raw.userinfo(held.tokens.access_token)).status, 200);
    });
  });
}
