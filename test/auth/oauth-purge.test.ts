import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { purgeExpired } from '../../src/auth/purge.ts';
import type { TestAuth } from '../helpers/auth.ts';
import { DB_KINDS, type DbKind } from '../helpers/env.ts';
import { Browser, pkce, startOAuth } from '../helpers/oauth.ts';
import { assertOAuthError, LOOPBACK_CB, RawOAuth, type Who } from '../helpers/oauth-raw.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

type Table = 'oauth_requests' | 'oauth_codes' | 'oauth_tokens' | 'oauth_families' | 'oauth_clients' | 'personal_access_tokens';
const TABLES: Table[] = ['oauth_requests', 'oauth_codes', 'oauth_tokens', 'oauth_families', 'oauth_clients', 'personal_access_tokens'];

interface Ctx {
  auth: TestAuth;
  raw: RawOAuth;
  user: Who;
}

/** A fresh service per test, whose purge runs only when the test calls it. */
async function withOAuth(kind: DbKind, fn: (ctx: Ctx) => Promise<void>): Promise<void> {
  const auth = await startOAuth(kind);
  await auth.service.purgeJob.stop();
  try {
    await fn({ auth, raw: new RawOAuth(auth), user: await auth.verifiedAccount() });
  } finally {
    await auth.close();
  }
}

async function counts(auth: TestAuth): Promise<Record<Table, number>> {
  const out = {} as Record<Table, number>;
  for (const t of TABLES) {
    out[t] = Number((await auth.service.deps.db.selectFrom(t).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  }
  return out;
}

/** Purges, then answers the row counts (purgeExpired's own report must agree with them). */
async function purge(auth: TestAuth): Promise<Record<Table, number>> {
  const before = await counts(auth);
  const removed = await purgeExpired(auth.service.deps);
  const after = await counts(auth);
  for (const t of TABLES) assert.equal(removed[t], before[t] - after[t], `purge report for ${t}`);
  return after;
}

for (const kind of DB_KINDS) {
  describe(`purgeExpired and the OAuth tables (${kind})`, () => {
    test('expired codes, pending requests, token rows and families are removed', () =>
      withOAuth(kind, async ({ auth, raw, user }) => {
        const p = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB };
        const tokens = await raw.tokens(user, p); // a used code, a family, a token row (access and refresh token)
        const rotated = await raw.refresh(p.clientId, tokens.refresh_token); // and a second row
        assert.equal(rotated.status, 200);
        await raw.code(user, p); // an unused code
        const pending = await new Browser(false).request(
          raw.authorizeUrl({ client_id: p.clientId, redirect_uri: LOOPBACK_CB, response_type: 'code', code_challenge: (await pkce()).challenge, code_challenge_method: 'S256' }),
        ); // nobody signs in: the request stays pending
        assert.equal(pending.status, 302);
        const start = await counts(auth);
        assert.deepEqual(
          [start.oauth_requests, start.oauth_codes, start.oauth_tokens, start.oauth_families],
          [1, 2, 2, 1],
        );

        assert.deepEqual(await purge(auth), start, 'nothing has expired yet');
        auth.clock.advance(10 * MINUTE + 1);
        const afterCodes = await purge(auth);
        assert.equal(afterCodes.oauth_requests, 0);
        assert.equal(afterCodes.oauth_codes, 2, 'codes stay a day past their 10 minutes, so a late replay still revokes');
        assert.equal(afterCodes.oauth_tokens, 2);

        auth.clock.advance(HOUR);
        const afterAccess = await purge(auth);
        assert.equal(afterAccess.oauth_tokens, 2, 'the rotated refresh token stays until it expires');
        assert.equal(afterAccess.oauth_families, 1);
        assert.equal((await raw.userinfo(rotated.body.access_token)).status, 401, 'its access token expired');
        const again = await raw.refresh(p.clientId, rotated.body.refresh_token);
        assert.equal(again.status, 200, 'the live refresh token still works after the purge');

        auth.clock.advance(30 * DAY + 1); // past the newest refresh token's expiry
        const afterAll = await purge(auth);
        assert.deepEqual(
          [afterAll.oauth_codes, afterAll.oauth_tokens, afterAll.oauth_families],
          [0, 0, 0],
        );
        assertOAuthError(await raw.refresh(p.clientId, again.body.refresh_token), 400, 'invalid_grant');
      }));

    test('a code replayed after its 10 minutes and a purge still revokes what its first use issued', () =>
      withOAuth(kind, async ({ auth, raw, user }) => {
        const p = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB };
        const { code, verifier } = await raw.code(user, p);
        const first = await raw.exchange(p, code, verifier);
        assert.equal(first.status, 200);
        auth.clock.advance(11 * MINUTE);
        await purge(auth);
        assertOAuthError(await raw.exchange(p, code, verifier), 400, 'invalid_grant');
        assert.equal((await raw.introspect(first.body.access_token)).body.active, false);
      }));

    test('rotated and revoked refresh tokens are kept until they expire, so reuse is still detected', () =>
      withOAuth(kind, async ({ auth, raw, user }) => {
        const p = { clientId: await raw.publicClient(), redirectUri: LOOPBACK_CB };
        // Family A: rotated once; the rotated token comes back after a purge.
        const a1 = await raw.tokens(user, p);
        const a2 = (await raw.refresh(p.clientId, a1.refresh_token)).body;
        // Family B: revoked by the client.
        const b = await raw.tokens(user, p);
        assert.equal((await raw.post('/oauth/revoke', { token: b.refresh_token, client_id: p.clientId })).status, 200);

        auth.clock.advance(2 * HOUR);
        const after = await purge(auth);
        assert.equal(after.oauth_tokens, 3);
        assert.equal(after.oauth_families, 2);

        assertOAuthError(await raw.refresh(p.clientId, a1.refresh_token), 400, 'invalid_grant');
        assertOAuthError(await raw.refresh(p.clientId, a2.refresh_token), 400, 'invalid_grant');
        assertOAuthError(await raw.refresh(p.clientId, b.refresh_token), 400, 'invalid_grant');
        const families = await auth.service.deps.db.selectFrom('oauth_families').select('revoked_at').execute();
        assert.ok(families.every((f) => f.revoked_at !== null), 'both families are revoked');

        auth.clock.advance(DAY);
        await purge(auth);
        assertOAuthError(await raw.refresh(p.clientId, a2.refresh_token), 400, 'invalid_grant');
        assert.ok((await auth.service.deps.db.selectFrom('oauth_families').select('revoked_at').execute()).every((f) => f.revoked_at !== null));
      }));

    test('a registered client that never obtained a token goes after 7 days (OAUTH_UNUSED_CLIENT_TTL_DAYS); one that did stays', () =>
      withOAuth(kind, async ({ auth, raw, user }) => {
        const unused = await raw.publicClient();
        const used = await raw.publicClient();
        const codeOnly = await raw.publicClient();
        await raw.tokens(user, { clientId: used, redirectUri: LOOPBACK_CB });
        await raw.code(user, { clientId: codeOnly, redirectUri: LOOPBACK_CB });

        auth.clock.advance(6 * DAY);
        assert.equal((await purge(auth)).oauth_clients, 3);
        auth.clock.advance(DAY + 1000);
        assert.equal((await purge(auth)).oauth_clients, 1);
        const left = await auth.service.deps.db.selectFrom('oauth_clients').select('client_id').execute();
        assert.deepEqual(left.map((c) => c.client_id), [used]);

        const gone = await new Browser(false).request(
          raw.authorizeUrl({ client_id: unused, redirect_uri: LOOPBACK_CB, response_type: 'code', code_challenge: (await pkce()).challenge, code_challenge_method: 'S256' }),
        );
        assert.equal(gone.status, 400, 'a purged client is unknown');
        const after = await raw.tokens(user, { clientId: used, redirectUri: LOOPBACK_CB });
        assert.match(after.access_token, /^oat_/);
      }));

    test('expired personal access tokens are removed; live ones and recently revoked ones stay', () =>
      withOAuth(kind, async ({ auth, user }) => {
        const session = await auth.login(user.email);
        const create = async (body: Record<string, unknown>) => (await auth.request('POST', '/v1/tokens', { token: session, body })).body;
        const live = await create({ name: 'live' });
        const expiring = await create({ name: 'expiring', expires_in_days: 1 });
        const revoked = await create({ name: 'revoked' });
        assert.equal((await auth.request('DELETE', `/v1/tokens/${revoked.id}`, { token: session })).status, 204);

        auth.clock.advance(DAY + 1000);
        assert.equal((await purge(auth)).personal_access_tokens, 2);
        const ids = (await auth.service.deps.db.selectFrom('personal_access_tokens').select('id').execute()).map((r) => r.id).sort();
        assert.deepEqual(ids, [live.id, revoked.id].sort());
        assert.equal((await new RawOAuth(auth).userinfo(expiring.token)).status, 401);
        assert.equal((await new RawOAuth(auth).userinfo(live.token)).status, 200);
        assert.equal((await auth.request('DELETE', `/v1/tokens/${revoked.id}`, { token: session })).status, 204, 'revoking again still works');

        auth.clock.advance(30 * DAY);
        await purge(auth);
        const left = await auth.service.deps.db.selectFrom('personal_access_tokens').select('id').execute();
        assert.deepEqual(left.map((r) => r.id), [live.id], 'a revoked token goes 30 days after its revocation');
      }));
  });
}
