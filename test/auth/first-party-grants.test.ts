import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, type TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { RawOAuth, type Who } from '../helpers/oauth-raw.ts';
import { reset, resetToken } from '../helpers/recovery.ts';

// An https redirect: remembered consent is never used for loopback ones (RFC 8252 section 8.6).
const CALLBACK = 'https://app.example/cb';

/**
 * A password reset ends the account's sign-ins to the service's own
 * products: the grants of the first-party client (OAUTH_CLIENT_ID), whose
 * products recheck them (the gateway's console does,
 * src/gateway/control-plane/accounts-session-grants.ts). Third-party grants of a verified
 * account stay (docs/security.md).
 */
for (const kind of DB_KINDS) {
  describe(`a password reset and the first-party client's grants (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let thirdParty: string;
    before(async () => {
      auth = await startOAuth(kind, { env: { AUTH_LIMIT_FORGOT_PER_EMAIL: '100/3600', AUTH_LIMIT_FORGOT: '1000/3600' } });
      raw = new RawOAuth(auth);
      thirdParty = await raw.publicClient([CALLBACK]);
    });
    after(() => auth.close());

    test("a reset of a verified account revokes the first-party client's grants and its unused codes; a third party's grant stays", async () => {
      const user: Who = { email: (await auth.verifiedAccount()).email, password: PASSWORD };
      const firstParty = { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT, scope: 'identity' };
      const product = await raw.tokens(user, firstParty);
      const pending = await raw.code(user, firstParty);
      const other = await raw.tokens(user, { clientId: thirdParty, redirectUri: CALLBACK, scope: 'identity' });

      assert.equal((await reset(auth, await resetToken(auth, user.email), 'the owner of this mailbox 2')).status, 200);

      const refreshed = await raw.refresh(STATIC_CLIENT_ID, product.refresh_token);
      assert.deepEqual([refreshed.status, refreshed.body.error], [400, 'invalid_grant']);
      assert.equal((await raw.userinfo(product.access_token)).status, 401);
      const late = await raw.exchange(firstParty, pending.code, pending.verifier);
      assert.deepEqual([late.status, late.body.error], [400, 'invalid_grant'], 'a code issued before the reset opens nothing after it');
      assert.equal((await raw.userinfo(other.access_token)).status, 200, "the third party's grant stays");
      assert.equal((await raw.refresh(thirdParty, other.refresh_token)).status, 200);
    });
  });
}
