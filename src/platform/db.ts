import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Compilable, CompiledQuery, Kysely, Migrator, PostgresAdapter, PostgresDialect, sql, type Migration } from 'kysely';
import { nodeSqliteDialect, SqliteReader, SqliteWriter } from './sqlite-dialect.ts';

export type DialectName = 'sqlite' | 'postgres';

export interface Database<DB> {
  db: Kysely<DB>;
  dialect: DialectName;
}

/**
 * PostgreSQL when `url` is set, otherwise SQLite at `sqlitePath`, whose
 * directory is created if missing (SQLite creates the file, not its
 * directory; DATA_DIR need not exist on a first start).
 * Timestamps are stored as epoch milliseconds (bigint), so int8 is parsed to a
 * JavaScript number (safe until the year 287396). The PostgreSQL client is
 * loaded only when a URL is set: a SQLite deployment never pays for it.
 */
export async function openDatabase<DB>(options: {
  url?: string | undefined;
  sqlitePath: string;
  poolSize?: number;
  /** An idle PostgreSQL connection failed (the server restarted): told here; the pool makes a new one on the next query. */
  onConnectionLost?: (err: Error) => void;
}): Promise<Database<DB>> {
  if (options.url) {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    });
    // Without a listener, a connection's error (the server went away) is thrown as an uncaught 'error' event and
    // takes the whole process down: the pool's own for an idle connection, each connection's for one in use (a
    // transaction, the jobs' advisory lock); that query fails, and the pool drops the broken connection when it is released.
    pool.on('error', (err) => options.onConnectionLost?.(err));
    pool.on('connect', (client) => client.on('error', (err) => options.onConnectionLost?.(err)));
    return { db: new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }), dialect: 'postgres' };
  }
  const onDisk = options.sqlitePath !== ':memory:' && options.sqlitePath !== '';
  if (onDisk) mkdirSync(dirname(options.sqlitePath), { recursive: true });
  return { db: new SqliteKysely<DB>(options.sqlitePath), dialect: 'sqlite' };
}

/**
 * A Kysely handle on SQLite that holds its connections in the open, for the
 * synchronous fast paths: the write connection every statement runs on
 * (prepared-transaction.ts runs a whole transaction on it in one go) and, for
 * a file, a read-only side connection ({@link precompiled} lookups). A
 * transaction of it is a plain Kysely Transaction, which has neither: what
 * runs inside one goes through Kysely.
 */
export class SqliteKysely<DB> extends Kysely<DB> {
  readonly writer: SqliteWriter;
  readonly reader: SqliteReader | undefined;
  /** The file ('' or ':memory:' for a database in memory). */
  readonly path: string;
  constructor(path: string) {
    const writer = new SqliteWriter(path);
    super({ dialect: nodeSqliteDialect(writer) });
    this.writer = writer;
    this.path = path;
    this.reader = path !== ':memory:' && path !== '' ? new SqliteReader(path) : undefined;
  }

  /** Closes the side connection, then Kysely's; and the writer even if Kysely never opened it (no query ran). */
  override async destroy(): Promise<void> {
    this.reader?.close();
    await super.destroy();
    this.writer.close();
  }
}

/** Closes a database and its side connection. */
export async function closeDatabase(db: AnyDb): Promise<void> {
  await db.destroy();
}

/**
 * A migrator bound to the connection's current schema. Kysely looks for its
 * bookkeeping tables in every schema it can see; naming ours keeps two
 * services (or two test runs) sharing a PostgreSQL database from confusing
 * each other's migrations.
 */
async function migrator(db: AnyDb, migrations: Record<string, Migration>): Promise<Migrator> {
  const provider = { getMigrations: async () => migrations };
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    const schema = rows[0]?.schema;
    if (schema) return new Migrator({ db, provider, migrationTableSchema: schema });
  }
  return new Migrator({ db, provider });
}

/** Runs every pending migration; throws with the failing migration's name. */
export async function migrateToLatest(db: AnyDb, migrations: Record<string, Migration>): Promise<string[]> {
  const m = await migrator(db, migrations);
  const { error, results } = await m.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`migration ${failed} failed`, { cause: error });
  }
  return (results ?? []).map((r) => r.migrationName);
}

/** True when the database answers and every known migration has been applied. */
export async function isReady(db: AnyDb, migrations: Record<string, Migration>): Promise<boolean> {
  try {
    await sql`select 1`.execute(db);
    const list = await (await migrator(db, migrations)).getMigrations();
    return list.every((m) => m.executedAt !== undefined);
  } catch {
    return false;
  }
}

/** True for a unique-constraint violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string; errcode?: number };
  return e?.code === '23505' || (typeof e?.message === 'string' && e.message.includes('UNIQUE constraint failed'));
}

/**
 * A database handle of any service. Platform code (outbox, jobs) works on its
 * own tables inside each service's database, whose full type it cannot know.
 */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type AnyDb = Kysely<any>;

/**
 * A hot-path single-row read, built with Kysely (one query code for both
 * databases), compiled once per database handle and run with fresh
 * parameters: building and compiling a query costs more than running it on
 * SQLite. On SQLite it runs on the read-only side connection (last committed
 * state); on PostgreSQL through the pool. `build` must use placeholder values
 * in the same order as the `params` later passed.
 */
export function precompiled<Row>(build: (db: AnyDb) => Compilable<Row>) {
  const cache = new WeakMap<AnyDb, string>();
  return async (db: AnyDb, params: readonly unknown[]): Promise<Row | undefined> => {
    let text = cache.get(db);
    if (text === undefined) {
      text = build(db).compile().sql;
      cache.set(db, text);
    }
    const reader = db instanceof SqliteKysely ? db.reader : undefined;
    if (reader) return reader.get(text, params) as Row | undefined;
    const result = await db.executeQuery<Row>(CompiledQuery.raw(text, [...params]));
    return result.rows[0];
  };
}
