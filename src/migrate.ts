import { closeDatabase, migrateToLatest, openDatabase } from './platform/db.ts';
import { configureAll, exitOnConfigError } from './platform/service-entry.ts';
import { services } from './services.ts';

/** `npm run migrate`: applies pending migrations of every service listed in src/services.ts, then exits. */
const configured = (() => {
  try {
    return configureAll(services, process.env);
  } catch (err) {
    return exitOnConfigError(err);
  }
})();
for (const service of configured) {
  const { db, dialect } = await openDatabase(service.database);
  try {
    const applied = await migrateToLatest(db, service.migrations);
    process.stdout.write(`${service.name} (${dialect}): ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`);
  } finally {
    await closeDatabase(db);
  }
}
