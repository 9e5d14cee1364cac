import { type ExpressionBuilder, SqliteAdapter, sql } from 'kysely';
import type { PurgeTarget } from '../../platform/purge.ts';
import type { GatewayConfig } from '../config.ts';
import type { GatewayDb, GatewayTables, UsageRecordRow } from '../schema.ts';

/**
 * The bytes of bodies tenants stored, per tenant and day (table
 * `stored_body_bytes`): what a tenant's stored-body quota counts
 * (GATEWAY_STORED_BODIES_QUOTA_BYTES). The usage writer adds each batch's
 * bodies in the transaction that inserts them, so the figure is exactly
 * what the table holds; a day leaves the sum once it is past the retention
 * (its records are purged within the hour) and its row is purged like the
 * daily rollups. Reading a tenant's sum reads at most a retention's worth
 * of rows (91 by default), never the records.
 */
export const BODY_DAY_MS = 86_400_000;

const textBytes = (text: string | null | undefined) => (text ? Buffer.byteLength(text) : 0);

/** The first day still within the retention (its records are not all purged yet). */
const firstKeptDay = (now: number, retentionMs: number) => Math.floor((now - retentionMs) / BODY_DAY_MS);

/**
 * Adds the bodies of `records` to their tenants' days, in the caller's
 * transaction: give it only the records that transaction inserted (as
 * addToRollups), so that a record replayed from the journal is not counted
 * twice. Records without bodies (almost all) cost a field read each.
 */
export async function addStoredBodyBytes(db: GatewayDb, records: readonly UsageRecordRow[]): Promise<void> {
  let sums: Map<string, { tenant_id: string; day: number; bytes: number }> | undefined;
  for (const r of records) {
    if (!r.request_body && !r.response_body) continue;
    const day = Math.floor(r.created_at / BODY_DAY_MS);
    const key = `${r.tenant_id} ${day}`;
    sums ??= new Map();
    const sum = sums.get(key) ?? { tenant_id: r.tenant_id, day, bytes: 0 };
    sum.bytes += textBytes(r.request_body) + textBytes(r.response_body);
    sums.set(key, sum);
  }
  if (!sums) return;
  // In key order, as the rollups are: two replicas' batches lock the same rows in the same order.
  const rows = [...sums.values()].sort((a, b) => (a.tenant_id < b.tenant_id ? -1 : a.tenant_id > b.tenant_id ? 1 : a.day - b.day));
  await db
    .insertInto('stored_body_bytes')
    .values(rows)
    .onConflict((oc) => oc.columns(['tenant_id', 'day']).doUpdateSet((eb) => ({ bytes: eb('stored_body_bytes.bytes', '+', eb.ref('excluded.bytes')) })))
    .execute();
}

/** The bytes of bodies `tenantId` stored within the retention. */
export async function storedBodyBytes(db: GatewayDb, tenantId: string, now: number, retentionMs: number): Promise<number> {
  const row = await db
    .selectFrom('stored_body_bytes')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('bytes'), sql<number>`0`).as('bytes'))
    .where('tenant_id', '=', tenantId)
    .where('day', '>=', firstKeptDay(now, retentionMs))
    .executeTakeFirst();
  return Number(row?.bytes ?? 0);
}

/** The purge's target: a day once all of it is older than the retention (as the daily rollups). */
export const storedBodyBytesPurgeTarget: PurgeTarget<GatewayConfig> = {
  table: 'stored_body_bytes',
  key: 'day',
  condition: (eb: ExpressionBuilder<GatewayTables, 'stored_body_bytes'>, now: number, config: GatewayConfig) =>
    eb('day', '<', firstKeptDay(now, config.usage.retentionMs)),
};

/**
 * Fills the table from the records' bodies (one pass over usage_records):
 * migration 0010 runs it, so that the bodies stored before the quota existed
 * count against it; after an empty table it is the repair too.
 */
export async function rebuildStoredBodyBytes(db: GatewayDb): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  // UTF-8 bytes, as Buffer.byteLength counts them (SQLite's length() of text counts characters).
  const bytes = (column: string) => (sqlite ? sql`coalesce(length(cast(${sql.ref(column)} as blob)), 0)` : sql`coalesce(octet_length(${sql.ref(column)}), 0)`);
  await db.deleteFrom('stored_body_bytes').execute();
  await sql`insert into stored_body_bytes (tenant_id, day, bytes)
    select tenant_id, created_at / ${sql.lit(BODY_DAY_MS)}, sum(${bytes('request_body')} + ${bytes('response_body')})
    from usage_records where request_body is not null or response_body is not null
    group by tenant_id, created_at / ${sql.lit(BODY_DAY_MS)}`.execute(db);
}
