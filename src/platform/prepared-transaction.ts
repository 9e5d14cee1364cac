import { type AnyDb, SqliteKysely } from './db.ts';
import type { PreparedStatement } from './prepared-statement.ts';

/** One statement of a {@link runTransaction}: its values, and how many rows it must change for the transaction to go on. */
export interface TransactionStep {
  statement: PreparedStatement<string>;
  params: Record<string, unknown>;
  /** When set, any other count rolls the transaction back (a lost claim, a condition no longer true). */
  changes: number | undefined;
}

/** A step, with its values checked against the statement's parameter names. */
export function step<Name extends string>(statement: PreparedStatement<Name>, params: Record<Name, unknown>, changes?: number): TransactionStep {
  return { statement: statement as PreparedStatement<string>, params, changes };
}

/**
 * Runs prepared statements as one transaction, in order; resolves true when
 * it committed, false when a step changed another number of rows than it
 * expected (everything is then rolled back). A statement that throws rolls
 * back too, and the error goes on. `db` is the database, never a transaction
 * (this one would nest in it).
 *
 * The same SQL on both databases (each statement is one Kysely query,
 * compiled per dialect). On PostgreSQL, a Kysely transaction through the
 * pool. On SQLite, when Kysely has no transaction open on the write
 * connection, the whole transaction runs there at once, synchronously
 * (node:sqlite is synchronous anyway): nothing else can run between its
 * statements, and it skips what Kysely's asynchronous path costs per
 * statement (its connection queue, a promise and a few objects each), garbage
 * whose collections stall every request in flight (docs/BENCHMARKS.md, 4b).
 * When Kysely has a transaction open (it awaits between its statements), the
 * steps go through Kysely, which queues them behind it.
 */
export async function runTransaction(db: AnyDb, steps: readonly TransactionStep[]): Promise<boolean> {
  if (db.isTransaction) throw new Error('runTransaction takes the database, not a transaction');
  if (db instanceof SqliteKysely && !db.writer.connection.isTransaction) return runOnSqliteWriter(db, steps);
  return db.transaction().execute(async (trx) => {
    for (const s of steps) {
      const changed = await s.statement.execute(trx, s.params);
      if (s.changes !== undefined && changed !== s.changes) throw ROLLBACK;
    }
    return true;
  }).catch((err: unknown) => {
    if (err === ROLLBACK) return false;
    throw err;
  });
}

/** Thrown inside a Kysely transaction to roll it back; never leaves runTransaction. */
const ROLLBACK = Symbol('rollback');

function runOnSqliteWriter(db: SqliteKysely<unknown>, steps: readonly TransactionStep[]): boolean {
  const { writer } = db;
  return writer.transaction(() => {
    for (const s of steps) {
      const changed = s.statement.runSync(db, writer.connection, s.params);
      if (s.changes !== undefined && changed !== s.changes) return false;
    }
    return true;
  });
}
