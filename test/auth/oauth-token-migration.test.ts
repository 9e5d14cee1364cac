import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { authMigrations } from '../../src/auth/migrations.ts';
import { randomToken, sha256 } from '../../src/platform/crypto.ts';
import { closeDatabase, migrateToLatest, openDatabase } from '../../src/platform/db.ts';
import { freshDatabase } from '../helpers/database.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { startOAuth } from '../helpers/oauth.ts';
import { assertOAuthError, RawOAuth } from '../helpers/oauth-raw.ts';

// Migration 0007_token_rotation keeps the tokens a running service had issued under the old two-table layout.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const CLIENT = 'svc_migrated-client';
// biome-ignore lint/suspicious/noExplicitAny: the old layout is no longer in AuthTables
type OldDb = Kysely<any>;

/** An access and a refresh token of a family, as the old layout stored them (a row each). */
async function oldPair(
  db: OldDb,
  family: string,
  at: number,
  options: { rotated?: boolean; revokeAccess?: boolean; revokeRefresh?: boolean } = {},
) {
  const access = randomToken('oat_');
  const refresh = randomToken('ort_');
  const base = { family_id: family, client_id: CLIENT, user_id: 'u1', scope: 'identity', resource: null, created_at: at };
  await db
    .insertInto('oauth_access_tokens')
    .values({ ...base, id: `a-${access}`, token_hash: sha256(access), expires_at: at + HOUR, rotated_at: null, revoked_at: options.revokeAccess ? at : null })
    .execute();
  await db
    .insertInto('oauth_refresh_tokens')
    .values({
      ...base,
      id: `r-${refresh}`,
      token_hash: sha256(refresh),
      expires_at: at + 30 * DAY,
      rotated_at: options.rotated ? at + 1 : null,
      revoked_at: options.revokeRefresh ? at + 2 : null,
    })
    .execute();
  return { access, refresh };
}

for (const kind of DB_KINDS) {
  describe(`migration 0007_token_rotation (${kind})`, () => {
    test('live tokens keep working; a half-done revocation completes; a revoked access token stays revoked', async () => {
      const database = await freshDatabase(kind);
      const { db } = await openDatabase<OldDb extends Kysely<infer T> ? T : never>({ url: database.url, sqlitePath: join(database.dataDir, 'auth.sqlite') });
      await migrateToLatest(db, Object.fromEntries(Object.entries(authMigrations).filter(([key]) => key < '0007_token_rotation')));
      const now = Date.now();
      await db
        .insertInto('users')
        .values({ id: 'u1', email: 'migrated@example.com', password_hash: 'x', email_verified_at: now, failed_logins: 0, locked_until: null, created_at: now, updated_at: now })
        .execute();
      await db
        .insertInto('oauth_clients')
        .values({ client_id: CLIENT, client_name: 'Old', client_uri: null, logo_uri: null, redirect_uris: '["http://127.0.0.1:7777/cb"]', application_type: 'native', scope: null, created_at: now, last_token_at: now })
        .execute();
      const family = (id: string) => ({
        id,
        user_id: 'u1',
        client_id: CLIENT,
        scope: 'identity',
        resource: null,
        derive_key: Buffer.alloc(32, id).toString('base64url'),
        created_at: now - 2 * HOUR,
        expires_at: now + 30 * DAY,
        revoked_at: null,
      });
      await db.insertInto('oauth_families').values([family('live'), family('half-revoked'), family('access-revoked')]).execute();
      const rotated = await oldPair(db, 'live', now - 2 * HOUR, { rotated: true });
      const live = await oldPair(db, 'live', now - 60_000);
      const half = await oldPair(db, 'half-revoked', now - 60_000, { revokeAccess: true, revokeRefresh: true });
      const accessRevoked = await oldPair(db, 'access-revoked', now - 60_000, { revokeAccess: true });
      await closeDatabase(db);

      const auth = await startOAuth(database); // runs 0007
      try {
        const raw = new RawOAuth(auth);
        assert.equal((await raw.userinfo(live.access)).status, 200, 'the live access token');
        const intro = (await raw.introspect(live.access)).body;
        assert.deepEqual([intro.active, intro.client_id, intro.scope, intro.sub], [true, CLIENT, 'identity', 'u1']);

        assert.equal((await raw.userinfo(half.access)).status, 401);
        assertOAuthError(await raw.refresh(CLIENT, half.refresh), 400, 'invalid_grant');
        assert.equal((await raw.userinfo(accessRevoked.access)).status, 401, 'a revoked access token stays revoked');
        assert.equal((await raw.refresh(CLIENT, accessRevoked.refresh)).status, 200, 'its refresh token still works');

        const next = await raw.refresh(CLIENT, live.refresh);
        assert.equal(next.status, 200, next.text);
        assert.equal((await raw.userinfo(next.body.access_token)).status, 200);
        // The rotated token of the old layout is still recognised as a reuse, and revokes the family.
        assertOAuthError(await raw.refresh(CLIENT, rotated.refresh), 400, 'invalid_grant');
        assert.equal((await raw.userinfo(next.body.access_token)).status, 401);
      } finally {
        await auth.close();
      }
    });
  });
}
