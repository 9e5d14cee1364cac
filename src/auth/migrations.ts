import type { Migration } from 'kysely';
import { jobRunsMigration } from '../platform/jobs.ts';
import { outboxMigration } from '../platform/mail.ts';
import { tokenRotationMigration } from './oauth/token-rotation-migration.ts';

/** Migrations of the account service, applied in key order; the same on SQLite and PostgreSQL. */
export const authMigrations: Record<string, Migration> = {
  '0001_outbox': outboxMigration,
  '0002_job_runs': jobRunsMigration,
  '0003_accounts': {
    async up(db) {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('email_verified_at', 'bigint')
        .addColumn('failed_logins', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('locked_until', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .addColumn('ip', 'text', (c) => c.notNull())
        .addColumn('user_agent', 'text')
        .execute();
      await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
      await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();
      await db.schema
        .createTable('verification_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .execute();
      await db.schema.createIndex('verification_tokens_expires').on('verification_tokens').column('expires_at').execute();
    },
  },
  '0004_tokens_and_oauth': {
    async up(db) {
      await db.schema
        .createTable('personal_access_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('pat_user').on('personal_access_tokens').column('user_id').execute();
      await db.schema.createIndex('pat_expires').on('personal_access_tokens').column('expires_at').execute();

      await db.schema
        .createTable('oauth_clients')
        .addColumn('client_id', 'text', (c) => c.primaryKey())
        .addColumn('client_name', 'text')
        .addColumn('client_uri', 'text')
        .addColumn('logo_uri', 'text')
        .addColumn('redirect_uris', 'text', (c) => c.notNull()) // JSON array
        .addColumn('application_type', 'text', (c) => c.notNull())
        .addColumn('scope', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_token_at', 'bigint')
        .execute();
      await db.schema.createIndex('oauth_clients_created').on('oauth_clients').column('created_at').execute();

      await db.schema
        .createTable('oauth_requests')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('params', 'text', (c) => c.notNull()) // JSON
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('oauth_requests_expires').on('oauth_requests').column('expires_at').execute();

      await db.schema
        .createTable('oauth_families')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('resource', 'text')
        .addColumn('derive_key', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('oauth_families_expires').on('oauth_families').column('expires_at').execute();

      await db.schema
        .createTable('oauth_codes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('code_hash', 'text', (c) => c.notNull().unique())
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('redirect_uri', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('resource', 'text')
        .addColumn('code_challenge', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .addColumn('family_id', 'text')
        .execute();
      await db.schema.createIndex('oauth_codes_expires').on('oauth_codes').column('expires_at').execute();

      for (const table of ['oauth_access_tokens', 'oauth_refresh_tokens'] as const) {
        await db.schema
          .createTable(table)
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('token_hash', 'text', (c) => c.notNull().unique())
          .addColumn('family_id', 'text', (c) => c.notNull().references('oauth_families.id').onDelete('cascade'))
          .addColumn('client_id', 'text', (c) => c.notNull())
          .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
          .addColumn('scope', 'text', (c) => c.notNull())
          .addColumn('resource', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('rotated_at', 'bigint')
          .addColumn('revoked_at', 'bigint')
          .execute();
        await db.schema.createIndex(`${table}_family`).on(table).column('family_id').execute();
        await db.schema.createIndex(`${table}_expires`).on(table).column('expires_at').execute();
      }

      await db.schema
        .createTable('oauth_consents')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('oauth_consents_pk', ['user_id', 'client_id'])
        .execute();
    },
  },
  '0005_login_failures_and_mail': {
    async up(db) {
      // Failed sign-ins per email address, whether or not an account has it (login-failures.ts).
      await db.schema
        .createTable('login_failures')
        .addColumn('address_hash', 'text', (c) => c.primaryKey())
        .addColumn('failures', 'integer', (c) => c.notNull())
        .addColumn('locked_until', 'bigint')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('login_failures_updated').on('login_failures').column('updated_at').execute();
      // Failed emails are never sent again, and from now on keep no body; those written before did
      // (in plaintext, with their links). Pending ones are sent, or fail, as before.
      await db.updateTable('outbox').set({ text_body: '', html_body: null }).where('status', '=', 'failed').execute();
    },
  },
  '0006_password_reset': {
    async up(db) {
      await db.schema
        .createTable('password_reset_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .execute();
      await db.schema.createIndex('password_reset_tokens_user').on('password_reset_tokens').column('user_id').execute();
      await db.schema.createIndex('password_reset_tokens_expires').on('password_reset_tokens').column('expires_at').execute();
    },
  },
  '0007_token_rotation': tokenRotationMigration,
  '0008_client_grant_types': {
    async up(db) {
      // Clients registered before grant types were kept were told they have both, so they keep both.
      await db.schema
        .alterTable('oauth_clients')
        .addColumn('grant_types', 'text', (c) => c.notNull().defaultTo('["authorization_code","refresh_token"]'))
        .execute();
    },
  },
  '0009_consent_redirect_uri': {
    async up(db) {
      // Consent is now remembered per redirect URI. Rows from before cannot be tied to one, so
      // they are dropped: each user is asked once more, which is safe where a guess would not be.
      await db.schema.dropTable('oauth_consents').execute();
      await db.schema
        .createTable('oauth_consents')
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('redirect_uri', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('oauth_consents_pk', ['user_id', 'client_id', 'redirect_uri'])
        .execute();
    },
  },
  '0010_account_self_service': {
    async up(db) {
      // When a session was last used (written at most once a minute; sessions.ts). Rows from before stay
      // null until their next use: the sign-in time is not a use we can claim for them.
      await db.schema.alterTable('sessions').addColumn('last_used_at', 'bigint').execute();
      // The client's name as the consent page showed it: a metadata-URL client's name lives only in its
      // document, which listing the user's grants must not fetch (user-grants.ts).
      await db.schema.alterTable('oauth_consents').addColumn('client_name', 'text').execute();
    },
  },
  '0011_sign_in_attempts': {
    async up(db) {
      // Sign-in attempts under way, counted before bcrypt beside the failures (login-failures.ts), so that
      // attempts sent at once cannot all be checked before the first failure is counted (issue 31, A2).
      await db.schema.alterTable('users').addColumn('pending_logins', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('users').addColumn('pending_logins_until', 'bigint').execute();
      await db.schema.alterTable('login_failures').addColumn('pending', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('login_failures').addColumn('pending_until', 'bigint').execute();
    },
  },
};
