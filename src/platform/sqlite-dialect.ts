import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';

/**
 * Kysely's SqliteDialect speaks the better-sqlite3 interface; this adapts
 * Node's built-in node:sqlite to it, so no native addon has to be compiled.
 * Prepared statements are cached per SQL text: Kysely runs one statement at a
 * time on its single connection, so reuse is safe.
 */
export function nodeSqliteDialect(path: string): SqliteDialect {
  return new SqliteDialect({ database: async () => adapt(openSqlite(path)) });
}

export function openSqlite(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  // WAL lets readers run beside the writer; NORMAL is durable across process crashes in WAL mode.
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;');
  return db;
}

const CACHE_LIMIT = 256;

function adapt(db: DatabaseSync): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => db.close(),
    prepare(sql: string): SqliteStatement {
      let stmt = cache.get(sql);
      if (stmt === undefined) {
        stmt = wrap(db.prepare(sql));
        if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
}

function wrap(stmt: StatementSync): SqliteStatement {
  return {
    reader: stmt.columns().length > 0,
    all: (params) => stmt.all(...toSqlite(params)),
    run: (params) => stmt.run(...toSqlite(params)),
    iterate: (params) => stmt.iterate(...toSqlite(params)),
  };
}

/** node:sqlite refuses booleans and undefined; store them the way SQLite itself does. */
function toSqlite(params: ReadonlyArray<unknown>): SQLInputValue[] {
  return params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p === undefined ? null : (p as SQLInputValue)));
}

/**
 * A second, read-only connection for hot single-row lookups, queried
 * synchronously: it skips the driver's queue and promise hops. In WAL mode it
 * reads the last committed state and never blocks or is blocked by the writer.
 * Opened on first use, so the file exists and is migrated by then.
 */
export class SqliteReader {
  readonly #path: string;
  #db: DatabaseSync | undefined;
  readonly #statements = new Map<string, StatementSync>();
  constructor(path: string) {
    this.#path = path;
  }

  get(sql: string, params: readonly unknown[]): unknown {
    this.#db ??= new DatabaseSync(this.#path, { readOnly: true });
    let stmt = this.#statements.get(sql);
    if (!stmt) {
      stmt = this.#db.prepare(sql);
      this.#statements.set(sql, stmt);
    }
    return stmt.get(...toSqlite(params));
  }

  close(): void {
    this.#db?.close();
  }
}
