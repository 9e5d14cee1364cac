import type { StatementSync } from 'node:sqlite';
import { type Compilable, CompiledQuery } from 'kysely';
import type { AnyDb } from './db.ts';
import { toSqlite } from './sqlite-dialect.ts';

/** Stands for a named parameter while the statement is built; never reaches a database. */
const MARK = '\u0000param:';

/** A statement of a hot path that changes rows, compiled once per dialect; see {@link preparedStatement}. */
export interface PreparedStatement<Name extends string> {
  /** Through Kysely, on either database: the database itself or an open transaction. Resolves with the rows it changed. */
  execute(db: AnyDb, params: Record<Name, unknown>): Promise<number>;
  /**
   * SQLite only: the same SQL, run at once on a node:sqlite connection (the
   * write connection of a SqliteKysely, for prepared-transaction.ts) and
   * compiled with `db`. Returns the rows it changed.
   */
  runSync(db: AnyDb, connection: import('node:sqlite').DatabaseSync, params: Record<Name, unknown>): number;
}

interface Compiled<Name extends string> {
  sql: string;
  values: ({ name: Name } | { constant: unknown })[];
}

/**
 * A statement of a hot path, built with Kysely (one query code for both
 * databases) and compiled once per dialect, then run with fresh values
 * through whatever handle it is given: the database or an open transaction
 * (`execute`), or on SQLite a connection directly (`runSync`). Building and
 * compiling a query costs more, and allocates more, than SQLite takes to run it.
 *
 * The statement owns its parameter list: `build` receives a stand-in for
 * each name (use them as the values), and the compiled placeholders are
 * mapped back to the names, so their order is never a contract left to a
 * comment. Any other value in the built query (a null, a literal) is kept as
 * a constant.
 *
 * @example
 * const claim = preparedStatement(['hash', 'now'], (db, p) =>
 *   db.updateTable('oauth_tokens').set({ rotated_at: p.now }).where('refresh_hash', '=', p.hash));
 * const changed = await claim.execute(trx, { hash, now });
 */
export function preparedStatement<Name extends string>(
  names: readonly Name[],
  build: (db: AnyDb, p: Record<Name, never>) => Compilable<unknown>,
): PreparedStatement<Name> {
  // Per dialect: a transaction shares its database's adapter.
  const compiled = new WeakMap<object, Compiled<Name>>();
  // Per node:sqlite connection: its own prepared statement.
  const statements = new WeakMap<object, StatementSync>();
  const stand = Object.fromEntries(names.map((n) => [n, `${MARK}${n}`])) as Record<Name, never>;
  const compiledFor = (db: AnyDb): Compiled<Name> => {
    const key = db.getExecutor().adapter;
    let statement = compiled.get(key);
    if (statement === undefined) {
      const query = build(db, stand).compile();
      const values = query.parameters.map((value) => {
        if (typeof value !== 'string' || !value.startsWith(MARK)) return { constant: value };
        return { name: value.slice(MARK.length) as Name };
      });
      statement = { sql: query.sql, values };
      compiled.set(key, statement);
    }
    return statement;
  };
  const valuesOf = (statement: Compiled<Name>, params: Record<Name, unknown>) =>
    statement.values.map((v) => ('name' in v ? params[v.name] : v.constant));
  return {
    async execute(db, params) {
      const statement = compiledFor(db);
      const result = await db.executeQuery(CompiledQuery.raw(statement.sql, valuesOf(statement, params)));
      return Number(result.numAffectedRows ?? 0n);
    },
    runSync(db, connection, params) {
      const statement = compiledFor(db);
      let prepared = statements.get(connection);
      if (prepared === undefined) {
        prepared = connection.prepare(statement.sql);
        statements.set(connection, prepared);
      }
      return Number(prepared.run(...toSqlite(valuesOf(statement, params))).changes);
    },
  };
}
