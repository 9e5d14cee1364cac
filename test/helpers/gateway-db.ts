import { gatewayMigrations } from '../../src/gateway/migrations.ts';
import type { GatewayDb } from '../../src/gateway/schema.ts';
import { closeDatabase, type DialectName, migrateToLatest, openDatabase } from '../../src/platform/db.ts';
import { type TestDatabase, freshDatabase } from './database.ts';
import type { DbKind } from './env.ts';

/** A fresh, migrated gateway database of the given kind; close() drops it. */
export async function freshGatewayDb(kind: DbKind): Promise<{ db: GatewayDb; dialect: DialectName; test: TestDatabase; close(): Promise<void> }> {
  const test = await freshDatabase(kind);
  const { db, dialect } = await openDatabase<import('../../src/gateway/schema.ts').GatewayTables>({
    url: test.url,
    sqlitePath: `${test.dataDir}/gateway.sqlite`,
  });
  await migrateToLatest(db, gatewayMigrations);
  return {
    db,
    dialect,
    test,
    async close() {
      await closeDatabase(db);
      await test.drop();
    },
  };
}
