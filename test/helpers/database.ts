import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type DbKind, POSTGRES_URL } from './env.ts';

export interface TestDatabase {
  kind: DbKind;
  /** Set for PostgreSQL: a URL whose search_path is a fresh schema. */
  url: string | undefined;
  /** A fresh directory for DATA_DIR (the SQLite file lives there). */
  dataDir: string;
  drop(): Promise<void>;
}

/**
 * A fresh, empty database: a SQLite file in a new temporary directory, or a
 * new schema on the test PostgreSQL server (selected through search_path),
 * so test files never see each other's rows.
 */
export async function freshDatabase(kind: DbKind): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'auth-test-'));
  // Retried: SQLite's checkpoint thread may still be removing its -wal and -shm files as the directory goes.
  const removeDir = () => rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  if (kind === 'sqlite') return { kind, url: undefined, dataDir, drop: async () => removeDir() };
  if (!POSTGRES_URL) throw new Error('TEST_POSTGRES_URL is not set');
  const schema = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    kind,
    url: url.toString(),
    dataDir,
    async drop() {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
      removeDir();
    },
  };
}
