import { type Migration, SqliteAdapter, sql } from 'kysely';
import { jobRunsMigration } from '../platform/jobs.ts';
import { outboxMigration } from '../platform/mail.ts';
import type { GatewayDb } from './schema.ts';
import { workspaceOwnershipMigration } from './control-plane/workspace-ownership-migration.ts';
import { rebuildStoredBodyBytes } from './usage/stored-body-bytes.ts';
import { LATENCY_ROLLUPS, MEASURES_0006, periodColumn, ROLLUPS, rebuildUsageRollups } from './usage/usage-rollups.ts';

/** Migrations of the gateway, applied in key order; the same on SQLite and PostgreSQL. */
export const gatewayMigrations: Record<string, Migration> = {
  '0001_outbox': outboxMigration,
  '0002_job_runs': jobRunsMigration,
  '0003_tenants': {
    async up(db) {
      await db.schema
        .createTable('tenants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('store_bodies', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('gateway_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('gateway_sessions_expires').on('gateway_sessions').column('expires_at').execute();
      await db.schema
        .createTable('magic_links')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('used_at', 'bigint')
        .execute();
      await db.schema.createIndex('magic_links_expires').on('magic_links').column('expires_at').execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_used_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.createIndex('api_keys_tenant').on('api_keys').column('tenant_id').execute();
      await db.schema
        .createTable('provider_keys')
        .addColumn('tenant_id', 'text', (c) => c.notNull().references('tenants.id').onDelete('cascade'))
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('key_sealed', 'text', (c) => c.notNull())
        .addColumn('key_last4', 'text', (c) => c.notNull())
        .addColumn('base_url', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('provider_keys_pk', ['tenant_id', 'provider'])
        .execute();
    },
  },
  '0004_usage_records': {
    async up(db) {
      await db.schema
        .createTable('usage_records')
        .addColumn('request_id', 'text', (c) => c.primaryKey())
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('session_id', 'text')
        .addColumn('tag', 'text')
        .addColumn('model_requested', 'text', (c) => c.notNull())
        .addColumn('model_used', 'text')
        .addColumn('provider', 'text')
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('error_code', 'text')
        .addColumn('stream', 'integer', (c) => c.notNull())
        .addColumn('prompt_tokens', 'integer', (c) => c.notNull())
        .addColumn('cached_tokens', 'integer', (c) => c.notNull())
        .addColumn('cache_write_tokens', 'integer', (c) => c.notNull())
        .addColumn('completion_tokens', 'integer', (c) => c.notNull())
        .addColumn('reasoning_tokens', 'integer', (c) => c.notNull())
        .addColumn('saved_tokens', 'integer', (c) => c.notNull())
        .addColumn('cost_usd', 'double precision', (c) => c.notNull())
        .addColumn('cost_saved_usd', 'double precision', (c) => c.notNull())
        .addColumn('cache_status', 'text', (c) => c.notNull())
        .addColumn('compaction', 'text', (c) => c.notNull())
        .addColumn('overhead_ms', 'double precision', (c) => c.notNull())
        .addColumn('upstream_ms', 'double precision', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('request_body', 'text')
        .addColumn('response_body', 'text')
        .execute();
      // The request log and the usage totals: a tenant's rows newest first; the id breaks ties for the cursor.
      await db.schema
        .createIndex('usage_records_tenant_time')
        .on('usage_records')
        .columns(['tenant_id', 'created_at', 'request_id'])
        .execute();
    },
  },
  /**
   * The pipeline's stages (cache, dedup, routing, compaction, provider prompt
   * caching, budgets): per-tenant settings and per-key limits as JSON
   * documents (validated by the control plane, read through
   * tenant-settings.ts), and what each stage did per call.
   */
  '0005_pipeline': {
    async up(db) {
      await db.schema.alterTable('tenants').addColumn('settings', 'text', (c) => c.notNull().defaultTo('{}')).execute();
      await db.schema.alterTable('api_keys').addColumn('limits', 'text', (c) => c.notNull().defaultTo('{}')).execute();
      const usage = [
        ['route_reason', 'text'],
        ['attempts', 'text'],
      ] as const;
      for (const [name, type] of usage) await db.schema.alterTable('usage_records').addColumn(name, type).execute();
      for (const name of ['saved_cache_usd', 'saved_compaction_usd', 'saved_routing_usd', 'saved_prompt_cache_usd']) {
        await db.schema.alterTable('usage_records').addColumn(name, 'double precision', (c) => c.notNull().defaultTo(0)).execute();
      }
      await db.schema.alterTable('usage_records').addColumn('compaction_saved_tokens', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
  },
  /**
   * Usage summed per tenant and hour or day (usage-rollups.ts), filled here
   * from the records already stored (in (tenant, time) order, a page at a
   * time: about 13 s per million records on SQLite, 20 s on PostgreSQL, on
   * two cores). From here on the usage writer keeps them. On SQLite the tables
   * are WITHOUT ROWID: a range of a tenant's hours is one run of the
   * primary key's B-tree, not an index walk plus a lookup per row.
   */
  '0006_usage_rollups': {
    async up(db) {
      const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
      // Labels compared byte by byte on PostgreSQL, as SQLite does: grouping thousands of sessions sorts them, and a
      // linguistic collation makes that sort several times slower.
      const label = sqlite ? sql`text` : sql`text collate "C"`;
      for (const { table, grain, labels } of [...ROLLUPS, ...LATENCY_ROLLUPS]) {
        const period = periodColumn(grain);
        let create = db.schema.createTable(table).addColumn('tenant_id', 'text', (c) => c.notNull()).addColumn(period, 'bigint', (c) => c.notNull());
        for (const name of labels) create = create.addColumn(name, label, (c) => c.notNull());
        const latency = LATENCY_ROLLUPS.some((l) => l.table === table);
        if (latency) create = create.addColumn('bucket', 'integer', (c) => c.notNull());
        // Counts and tokens too as double precision: exact to 2^53, and PostgreSQL sums doubles several times faster
        // than bigints (whose sum is a numeric).
        for (const m of latency ? ['total_calls', 'overhead_calls'] : MEASURES_0006) create = create.addColumn(m, 'double precision', (c) => c.notNull());
        // The session right after the time: grouping by session reads a range of hours, its groups side by side.
        const rest = latency ? ['bucket'] : [...labels.filter((l) => l === 'session_id'), ...labels.filter((l) => l !== 'session_id')];
        create = create.addPrimaryKeyConstraint(`${table}_pk`, ['tenant_id', period, ...rest] as never);
        await (sqlite ? create.modifyEnd(sql`without rowid`) : create).execute();
      }
      await rebuildUsageRollups(db as GatewayDb, MEASURES_0006);
    },
  },
  /**
   * The request log's filters, each by an index that lists the tenant's
   * matching rows newest first (request-log.ts): a page then reads about a
   * page of rows however common or rare the value, where the time index
   * alone would read every record of the range to find a rare one. Tag,
   * session and model_used skip the rows without one; the errors' index
   * (status not 2xx, written as request-log.ts's ERROR_STATUS, which SQLite
   * needs repeated verbatim) carries the status to pick a code or a class.
   */
  '0007_request_log_indexes': {
    async up(db) {
      const byColumn: [string, string, boolean][] = [
        ['usage_records_tenant_key', 'key_id', false],
        ['usage_records_tenant_tag', 'tag', true],
        ['usage_records_tenant_session', 'session_id', true],
        ['usage_records_tenant_model_used', 'model_used', true],
        ['usage_records_tenant_model_requested', 'model_requested', false],
        ['usage_records_tenant_cache', 'cache_status', false],
      ];
      for (const [name, column, nullable] of byColumn) {
        const index = db.schema.createIndex(name).on('usage_records').columns(['tenant_id', column, 'created_at', 'request_id']);
        await (nullable ? index.where(sql.ref(column), 'is not', null) : index).execute();
      }
      await db.schema
        .createIndex('usage_records_tenant_errors')
        .on('usage_records')
        .columns(['tenant_id', 'created_at', 'request_id', 'status'])
        .where(sql<boolean>`(status < 200 or status > 299)`)
        .execute();
    },
  },
  '0008_workspace_ownership': workspaceOwnershipMigration,
  /**
   * Why a record's token counts are not the provider's own (schema.ts
   * `usage_flags`: clamped, estimated); null for every record before.
   */
  '0009_usage_flags': {
    async up(db) {
      await db.schema.alterTable('usage_records').addColumn('usage_flags', 'text').execute();
    },
  },
  /**
   * Stored bodies bounded per tenant (stored-body-bytes.ts, the usage stage's
   * stored-bodies.ts): what became of each call's bodies, and the bytes each
   * tenant stored per day, filled here from the bodies already stored (one
   * pass over the records) so that they count against the quota too.
   */
  '0010_storage_quota': {
    async up(db) {
      await db.schema.alterTable('usage_records').addColumn('body_storage', 'text').execute();
      const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
      const create = db.schema
        .createTable('stored_body_bytes')
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('day', 'bigint', (c) => c.notNull())
        .addColumn('bytes', 'double precision', (c) => c.notNull())
        .addPrimaryKeyConstraint('stored_body_bytes_pk', ['tenant_id', 'day']);
      await (sqlite ? create.modifyEnd(sql`without rowid`) : create).execute();
      await rebuildStoredBodyBytes(db as GatewayDb);
    },
  },
  /**
   * What the provider's own prompt caching saved that the gateway does not
   * claim (schema.ts `saved_provider_cache_usd`), per record and summed in
   * the rollups. Outside cost_saved_usd. Nothing to fill: no record before
   * this one measured it, so 0 is every earlier record's value.
   */
  '0011_provider_cache_saved': {
    async up(db) {
      for (const table of ['usage_records', ...ROLLUPS.map((r) => r.table)]) {
        await db.schema.alterTable(table).addColumn('saved_provider_cache_usd', 'double precision', (c) => c.notNull().defaultTo(0)).execute();
      }
    },
  },
  /**
   * The inbound surface of each call (schema.ts `surface`): Chat Completions
   * was the only one before, so that is every earlier record's value.
   */
  '0012_usage_surface': {
    async up(db) {
      await db.schema.alterTable('usage_records').addColumn('surface', 'text', (c) => c.notNull().defaultTo('chat.completions')).execute();
    },
  },
  /**
   * The Responses API's state (surfaces/responses/store.ts): each stored
   * response with its input items, sealed, chained by previous_id. The
   * purge walks expires_at; a tenant's quota sums `bytes` of its live rows
   * from the (tenant_id, expires_at, bytes) index alone.
   */
  '0013_responses': {
    async up(db) {
      await db.schema
        .createTable('stored_responses')
        .addColumn('tenant_id', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('previous_id', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addColumn('sealed', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('stored_responses_pk', ['tenant_id', 'id'])
        .execute();
      await db.schema.createIndex('stored_responses_expires').on('stored_responses').column('expires_at').execute();
      await db.schema.createIndex('stored_responses_tenant_bytes').on('stored_responses').columns(['tenant_id', 'expires_at', 'bytes']).execute();
    },
  },
};
