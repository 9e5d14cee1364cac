import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { revokeUserFamilies } from '../../src/auth/oauth/token-families.ts';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { startOAuth } from '../helpers/oauth.ts';
import { type AuthorizeParams, assertOAuthError, LOOPBACK_CB, RawOAuth, type Who } from '../helpers/oauth-raw.ts';

// Defect 10: a family's revocation is one atomic write that every token of the family obeys at once,
// whatever refresh raced it (RFC 9700 section 4.14.2: revoking the family must leave no live token).

const ROUNDS = 25;

for (const kind of DB_KINDS) {
  describe(`token families: revocation is atomic (${kind})`, () => {
    let auth: TestAuth;
    let raw: RawOAuth;
    let user: Who;
    let pub: AuthorizeParams;
    before(async () => {
      auth = await startOAuth(kind);
      raw = new RawOAuth(auth);
      user = await auth.verifiedAccount();
      pub = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB, scope: 'identity' };
    });
    after(() => auth.close());

    /** The access token is refused at userinfo and inactive at introspection. */
    async function assertDead(accessToken: string, what: string): Promise<void> {
      assert.equal((await raw.userinfo(accessToken)).status, 401, `${what}: userinfo`);
      assert.deepEqual((await raw.introspect(accessToken)).body, { active: false }, `${what}: introspection`);
    }

    test('a refresh racing a revocation of its family never leaves a live token', async () => {
      const outcomes = { refreshed: 0, refused: 0 };
      for (let round = 0; round < ROUNDS; round++) {
        const t = await raw.tokens(user, pub);
        const [refreshed, revoked] = await Promise.all([
          raw.refresh(pub.clientId, t.refresh_token),
          raw.post('/oauth/revoke', { token: t.refresh_token, client_id: pub.clientId }),
        ]);
        assert.equal(revoked.status, 200, revoked.text);
        await assertDead(t.access_token, `round ${round}, the first access token`);
        if (refreshed.status === 200) {
          outcomes.refreshed++;
          await assertDead(refreshed.body.access_token, `round ${round}, the access token of the racing refresh`);
          assertOAuthError(await raw.refresh(pub.clientId, refreshed.body.refresh_token), 400, 'invalid_grant');
        } else {
          outcomes.refused++;
          assertOAuthError(refreshed, 400, 'invalid_grant');
        }
      }
      assert.equal(outcomes.refreshed + outcomes.refused, ROUNDS);
    });

    test("revoking a user's families is one write, and their access and refresh tokens end at once", async () => {
      const other = await auth.verifiedAccount();
      const a = await raw.tokens(user, pub);
      const b = (await raw.refresh(pub.clientId, (await raw.tokens(user, pub)).refresh_token)).body;
      const kept = await raw.tokens(other, pub);
      assert.equal((await raw.userinfo(a.access_token)).status, 200);

      const userId = (await raw.introspect(a.access_token)).body.sub as string;
      assert.equal(await revokeUserFamilies(auth.service.deps.db, userId, auth.clock.now()), 2);
      await assertDead(a.access_token, 'family A');
      await assertDead(b.access_token, 'family B, after a rotation');
      assertOAuthError(await raw.refresh(pub.clientId, a.refresh_token), 400, 'invalid_grant');
      assertOAuthError(await raw.refresh(pub.clientId, b.refresh_token), 400, 'invalid_grant');
      assert.equal((await raw.userinfo(kept.access_token)).status, 200, "another user's tokens are untouched");
      assert.equal(await revokeUserFamilies(auth.service.deps.db, userId, auth.clock.now()), 0, 'nothing left to revoke');
    });

    test('revoking an access token alone (RFC 7009) ends it; its refresh token and family live on', async () => {
      const t = await raw.tokens(user, pub);
      assert.equal((await raw.post('/oauth/revoke', { token: t.access_token, client_id: pub.clientId })).status, 200);
      await assertDead(t.access_token, 'the revoked access token');
      const next = await raw.refresh(pub.clientId, t.refresh_token);
      assert.equal(next.status, 200, next.text);
      assert.equal((await raw.userinfo(next.body.access_token)).status, 200);
    });

    test('a refresh after the revocation is refused as revoked, and does not count as a reuse', async () => {
      const t = await raw.tokens(user, pub);
      assert.equal((await raw.post('/oauth/revoke', { token: t.refresh_token, client_id: pub.clientId })).status, 200);
      const r = await raw.refresh(pub.clientId, t.refresh_token);
      assertOAuthError(r, 400, 'invalid_grant');
      assert.match(r.body.error_description, /revoked/);
    });
  });
}
