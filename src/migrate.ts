import { loadAuthConfig } from './auth/config.ts';
import { exitOnConfigError } from './auth/main.ts';
import { authMigrations } from './auth/migrations.ts';
import { migrateToLatest, openDatabase } from './platform/db.ts';

/** `npm run migrate`: applies pending migrations of every service, then exits. */
const config = (() => {
  try {
    return loadAuthConfig();
  } catch (err) {
    return exitOnConfigError(err);
  }
})();
const { db, dialect } = openDatabase({ url: config.databaseUrl, sqlitePath: config.sqlitePath });
const applied = await migrateToLatest(db, authMigrations);
process.stdout.write(`auth (${dialect}): ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`);
await db.destroy();
