import { type Migration, sql } from 'kysely';

/**
 * Migration 0007_token_rotation: access and refresh tokens move from two
 * tables (a row each, each with its own client, user, resource and
 * revocation) to `oauth_tokens`, one row per issuance, and revocation lives
 * on the family alone. A rotation then writes one new row and marks one old
 * one; a revocation is one conditional update of the family row, atomic by
 * itself (defect 10), and every lookup joins the family.
 *
 * Existing tokens are kept: each refresh token becomes a row, paired with the
 * access token issued with it (same family, same creation instant) when that
 * pairing is unambiguous and the access token was not revoked; otherwise the
 * row has no access token (the client refreshes for a new one). A family with
 * a token that was revoked one by one (the non-atomic revocation interrupted
 * halfway) is revoked as a whole, which is what that revocation meant.
 * Families lose `expires_at`, which every refresh used to rewrite: a family
 * now goes when its last token row is purged.
 */
export const tokenRotationMigration: Migration = {
  async up(db) {
    await db.schema
      .createTable('oauth_tokens')
      .addColumn('refresh_hash', 'text', (c) => c.primaryKey())
      .addColumn('access_hash', 'text', (c) => c.unique())
      .addColumn('family_id', 'text', (c) => c.notNull().references('oauth_families.id').onDelete('cascade'))
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('access_expires_at', 'bigint', (c) => c.notNull())
      .addColumn('refresh_expires_at', 'bigint', (c) => c.notNull())
      .addColumn('rotated_at', 'bigint')
      .execute();
    await db.schema.createIndex('oauth_tokens_family').on('oauth_tokens').column('family_id').execute();
    await db.schema.createIndex('oauth_tokens_expires').on('oauth_tokens').column('refresh_expires_at').execute();

    // One access token per refresh token, only where (family, instant) names exactly one of each.
    await sql`
      insert into oauth_tokens (refresh_hash, access_hash, family_id, scope, created_at, access_expires_at, refresh_expires_at, rotated_at)
      select r.token_hash, a.token_hash, r.family_id, r.scope, r.created_at, coalesce(a.expires_at, r.created_at), r.expires_at, r.rotated_at
      from oauth_refresh_tokens r
      left join oauth_access_tokens a
        on a.family_id = r.family_id and a.created_at = r.created_at and a.revoked_at is null
        and (select count(*) from oauth_access_tokens a2 where a2.family_id = r.family_id and a2.created_at = r.created_at) = 1
        and (select count(*) from oauth_refresh_tokens r2 where r2.family_id = r.family_id and r2.created_at = r.created_at) = 1
    `.execute(db);
    await sql`
      update oauth_families
      set revoked_at = (select min(r.revoked_at) from oauth_refresh_tokens r where r.family_id = oauth_families.id)
      where revoked_at is null
        and exists (select 1 from oauth_refresh_tokens r where r.family_id = oauth_families.id and r.revoked_at is not null)
    `.execute(db);

    await db.schema.dropTable('oauth_access_tokens').execute();
    await db.schema.dropTable('oauth_refresh_tokens').execute();
    // SQLite refuses to drop an indexed column; PostgreSQL would drop the index with it.
    await db.schema.dropIndex('oauth_families_expires').execute();
    await db.schema.alterTable('oauth_families').dropColumn('expires_at').execute();
    // Revoking a user's families (password reset) and the users.id cascade look families up by user.
    await db.schema.createIndex('oauth_families_user').on('oauth_families').column('user_id').execute();
  },
};
