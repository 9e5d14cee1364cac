import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/**
 * Migration 0008: a workspace holds its address only once the address is
 * proven (workspace-ownership.ts, address-confirmation.ts).
 * - `tenants.email` may be NULL (a released workspace holds no address; the
 *   unique index admits several NULLs on both databases), with
 *   `email_confirmed_at`, the confirmation link's hash and expiry, and
 *   `released_email`/`released_at`. Workspaces that exist already count as
 *   confirmed (at their creation): their owners have used them, and sign-in
 *   links to the address have reached them; nothing tells a squatter's
 *   workspace made before this migration from an owner's (docs/console.md).
 * - `magic_links.email`: the address a link proves.
 * - `gateway_sessions.accounts_grant` and `accounts_checked_at`: the account
 *   service's grant a console session keeps (accounts-session-grants.ts).
 *
 * SQLite cannot drop a NOT NULL constraint, so `tenants` is rebuilt there
 * (https://sqlite.org/lang_altertable.html#otheralter): foreign keys off
 * (outside the transaction, where the pragma works; otherwise dropping the
 * old table would cascade to every session, key and link), the new table
 * filled, the old dropped, the new renamed, the foreign keys checked before
 * the commit, and the pragma restored whatever happens.
 */
export const workspaceOwnershipMigration: Migration = {
  async up(db) {
    if (db.getExecutor().adapter instanceof SqliteAdapter) await rebuildSqliteTenants(db);
    else {
      await sql`alter table tenants alter column email drop not null`.execute(db);
      for (const [name, type] of NEW_TENANT_COLUMNS) await db.schema.alterTable('tenants').addColumn(name, type).execute();
      await sql`update tenants set email_confirmed_at = created_at`.execute(db);
    }
    await db.schema.createIndex('tenants_confirmation_hash').unique().on('tenants').column('confirmation_hash').execute();
    await db.schema.alterTable('magic_links').addColumn('email', 'text').execute();
    await db.schema.alterTable('gateway_sessions').addColumn('accounts_grant', 'text').execute();
    await db.schema.alterTable('gateway_sessions').addColumn('accounts_checked_at', 'bigint').execute();
  },
};

const NEW_TENANT_COLUMNS = [
  ['email_confirmed_at', 'bigint'],
  ['confirmation_hash', 'text'],
  ['confirmation_expires_at', 'bigint'],
  ['released_email', 'text'],
  ['released_at', 'bigint'],
] as const;

// biome-ignore lint/suspicious/noExplicitAny: a migration sees the schema as it was, not as schema.ts types it now
async function rebuildSqliteTenants(db: Kysely<any>): Promise<void> {
  await sql`pragma foreign_keys = off`.execute(db);
  try {
    await db.transaction().execute(async (trx) => {
      let table = trx.schema
        .createTable('tenants_0008')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.unique())
        .addColumn('store_bodies', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('settings', 'text', (c) => c.notNull().defaultTo('{}'));
      for (const [name, type] of NEW_TENANT_COLUMNS) table = table.addColumn(name, type);
      await table.execute();
      await sql`insert into tenants_0008 (id, name, email, store_bodies, created_at, settings, email_confirmed_at)
        select id, name, email, store_bodies, created_at, settings, created_at from tenants`.execute(trx);
      await sql`drop table tenants`.execute(trx);
      await sql`alter table tenants_0008 rename to tenants`.execute(trx);
      const broken = await sql<Record<string, unknown>>`pragma foreign_key_check`.execute(trx);
      if (broken.rows.length > 0) throw new Error(`migration 0008: ${broken.rows.length} rows refer to no workspace after the rebuild of tenants`);
    });
  } finally {
    await sql`pragma foreign_keys = on`.execute(db);
  }
}
