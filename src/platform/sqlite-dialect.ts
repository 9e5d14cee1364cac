import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  SqliteDialect,
  type SqliteDatabase,
  type SqliteDialectConfig,
  SqliteDriver,
  type SqliteStatement,
} from 'kysely';

/**
 * The service's one write connection to a SQLite file, with its checkpoint
 * thread (see {@link openSqlite}, {@link startCheckpointer}). Kysely runs
 * every statement on it (see {@link nodeSqliteDialect}); synchronous fast
 * paths (src/platform/prepared-transaction.ts) run on it too, between
 * Kysely's transactions.
 */
export class SqliteWriter {
  readonly connection: DatabaseSync;
  readonly #stopCheckpointer: (() => void) | undefined;
  /** BEGIN IMMEDIATE, COMMIT and ROLLBACK, prepared once (see transaction). */
  #control: { begin: StatementSync; commit: StatementSync; rollback: StatementSync } | undefined;
  /**
   * `checkpoints: false`: no checkpoint thread of its own, for a second
   * writer of a file whose first writer has one (the gateway's usage thread).
   */
  constructor(path: string, options: { checkpoints?: boolean } = {}) {
    this.connection = openSqlite(path);
    this.#stopCheckpointer = isFile(path) && options.checkpoints !== false ? startCheckpointer(path, this.connection) : undefined;
  }

  /**
   * Runs `body` as one write transaction, at once (BEGIN IMMEDIATE: the write
   * lock first, since it writes): commits when it returns true, rolls back
   * when it returns false or throws. Only between Kysely's transactions
   * (check `connection.isTransaction`): inside one, this would nest.
   */
  transaction(body: () => boolean): boolean {
    this.#control ??= {
      begin: this.connection.prepare('BEGIN IMMEDIATE'),
      commit: this.connection.prepare('COMMIT'),
      rollback: this.connection.prepare('ROLLBACK'),
    };
    const { begin, commit, rollback } = this.#control;
    begin.run();
    try {
      if (body()) {
        commit.run();
        return true;
      }
      rollback.run();
      return false;
    } catch (err) {
      // A failed COMMIT (SQLITE_BUSY, say) leaves the transaction open.
      if (this.connection.isTransaction) rollback.run();
      throw err;
    }
  }

  /** Stops the checkpoint thread and closes the connection; a second call does nothing. */
  close(): void {
    if (!this.connection.isOpen) return;
    this.#stopCheckpointer?.();
    this.connection.close();
  }
}

/**
 * Kysely's SqliteDialect speaks the better-sqlite3 interface; this adapts
 * Node's built-in node:sqlite to it, so no native addon has to be compiled.
 * Prepared statements are cached per SQL text: Kysely runs one statement at a
 * time on its single connection, so reuse is safe.
 */
export function nodeSqliteDialect(writer: SqliteWriter): SqliteDialect {
  return new ImmediateSqliteDialect({ database: async () => adapt(writer) });
}

/**
 * Kysely's transactions begin DEFERRED: the write lock is taken at the first
 * write, and when another connection committed since the transaction's first
 * read, that write fails at once with SQLITE_BUSY (its snapshot is stale; the
 * busy timeout does not apply). A file with a second writer (the gateway's
 * usage thread) made that a 500 on the control plane. BEGIN IMMEDIATE takes
 * the lock first, waiting for it under the busy timeout, as the synchronous
 * fast paths (SqliteWriter.transaction) always did.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

const isFile = (path: string) => path !== '' && path !== ':memory:';

/**
 * The pragmas of the service's write connection, and the durability each keeps:
 * - journal_mode=WAL: a commit appends its pages to the write-ahead log, so
 *   readers (the side connection of hot lookups) never block the writer or
 *   each other; a commit is atomic whatever happens.
 * - synchronous=NORMAL: a commit is not fsynced. Durable across a crash of
 *   the process (the log is in the OS's hands); a power loss or a kernel
 *   crash can undo the last commits since the last checkpoint, never corrupt
 *   the file (https://sqlite.org/pragma.html#pragma_synchronous). FULL would
 *   fsync every commit on the event loop: every token rotation would wait
 *   for the disk. Deployments that must not lose a revocation to a power cut
 *   run PostgreSQL.
 * - wal_autocheckpoint: by default the committing connection copies the log
 *   back into the database every 1000 pages, with two fsyncs, on the event
 *   loop: every hundred-odd token rotations a request stalled for
 *   milliseconds (refresh grant p99 5 × its p50). A worker thread with its
 *   own connection checkpoints instead every 50 ms, every 5 ms while
 *   commits keep coming ({@link startCheckpointer}),
 *   with the same two fsyncs, so each checkpoint keeps SQLite's guarantees;
 *   and since a checkpoint is also when synchronous=NORMAL syncs the log,
 *   commits older than about 50 ms survive a power loss, however quiet the
 *   service (by default, up to 1000 pages of commits could wait for that,
 *   hours on a quiet service). The writer keeps a far higher threshold as a
 *   backstop, should that thread ever stop.
 */
export function openSqlite(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec(
    // busy_timeout first: switching to WAL needs a lock that a just-closed process's checkpoint thread may still hold.
    `PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
     PRAGMA wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}; PRAGMA journal_size_limit = ${JOURNAL_SIZE_LIMIT};`,
  );
  return db;
}

/** Pages (4 KiB) of log past which the writer checkpoints by itself: only if the checkpoint thread has stopped. */
const BACKSTOP_CHECKPOINT_PAGES = 120_000;
/**
 * Pages of log past which the checkpoint thread asks the writer to let the
 * log restart (see the worker): about 250 MB. Only sustained writes, with
 * never a few idle milliseconds for the thread to catch up, bring the log
 * this far; then each restart costs the writer one checkpoint and its two
 * fsyncs on the event loop (measured 1 to 14 ms of waiting on the disk here),
 * which stalls every request in flight. At the refresh benchmark's rate
 * (about 27 KiB of log per rotation) a 16,000-page threshold restarted the log
 * every 2,400 rotations, and about one request in 300 waited behind one;
 * four times the threshold, four times fewer. The cost is disk space: the
 * log file keeps the size it reached, up to JOURNAL_SIZE_LIMIT.
 */
const RESTART_PAGES = 60_000;
/** A log is cut back to this size when it restarts (bytes): above what RESTART_PAGES fill, so it is reused, not regrown. */
const JOURNAL_SIZE_LIMIT = 256 * 1024 * 1024;
const CHECKPOINT_INTERVAL_MS = 50;
/** While the log grows (see the worker: small checkpoints disturb the writer less than large ones). */
const BUSY_CHECKPOINT_INTERVAL_MS = 5;

/**
 * Starts the checkpoint thread (sqlite-checkpoint-worker.ts); the function
 * returned stops it. When it asks, the writer `db` runs one checkpoint
 * itself, between two transactions (never inside one).
 */
function startCheckpointer(path: string, db: DatabaseSync): () => void {
  const worker = new Worker(new URL('./sqlite-checkpoint-worker.ts', import.meta.url), {
    workerData: { path, intervalMs: CHECKPOINT_INTERVAL_MS, busyIntervalMs: BUSY_CHECKPOINT_INTERVAL_MS, restartPages: RESTART_PAGES },
  });
  worker.unref(); // never what keeps a process alive
  worker.on('error', () => {}); // the backstop threshold keeps checkpointing going without it
  worker.on('message', (message) => {
    if (message !== 'restart' || !db.isOpen || db.isTransaction) return;
    try {
      db.exec('PRAGMA wal_checkpoint(PASSIVE)');
    } catch {
      // Busy: the thread's next checkpoint asks again.
    }
  });
  return () => worker.postMessage('stop');
}

const CACHE_LIMIT = 256;

function adapt(writer: SqliteWriter): SqliteDatabase {
  const db = writer.connection;
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => writer.close(),
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
export function toSqlite(params: ReadonlyArray<unknown>): SQLInputValue[] {
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
