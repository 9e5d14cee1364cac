import type { GatewayDb } from './gateway/schema.ts';
import { rebuildUsageRollups } from './gateway/usage/usage-rollups.ts';
import { closeDatabase, migrateToLatest, openDatabase } from './platform/db.ts';
import { configureAll, exitOnConfigError } from './platform/service-entry.ts';
import { services } from './services.ts';

/**
 * `npm run rebuild-usage-rollups`: empties the gateway's usage rollups and
 * fills them again from its usage records, in one transaction (readers see
 * the old sums or the new ones, never a half-filled table). The repair after
 * a rolling upgrade during which a replica of a release before the rollups
 * wrote records (docs/operations.md); run it while no replica writes records.
 * Reads the same environment as `npm run migrate`, and migrates first.
 */
const configured = (() => {
  try {
    return configureAll(services, process.env);
  } catch (err) {
    return exitOnConfigError(err);
  }
})();
const gateway = configured.find((s) => s.name === 'gateway');
if (!gateway) throw new Error('src/services.ts lists no gateway');
const { db, dialect } = await openDatabase<unknown>(gateway.database);
try {
  await migrateToLatest(db, gateway.migrations);
  const records = await (db as unknown as GatewayDb).transaction().execute((trx) => rebuildUsageRollups(trx));
  process.stdout.write(`gateway (${dialect}): usage rollups rebuilt from ${records} usage records\n`);
} finally {
  await closeDatabase(db);
}
