import { type Compilable, CompiledQuery, type QueryResult } from 'kysely';
import type { AnyDb } from './db.ts';

/** Stands for a named parameter while the statement is built; never reaches a database. */
const MARK = '\u0000param:';

/**
 * A statement of a hot path, built with Kysely (one query code for both
 * databases) and compiled once per dialect, then run with fresh values
 * through whatever handle it is given: the database or an open transaction.
 * Building and compiling a query costs more, and allocates more, than SQLite
 * takes to run it.
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
 * await claim(trx, { hash, now });
 */
export function preparedStatement<Name extends string, Row = unknown>(
  names: readonly Name[],
  build: (db: AnyDb, p: Record<Name, never>) => Compilable<Row>,
) {
  const compiled = new WeakMap<object, { sql: string; values: ({ name: Name } | { constant: unknown })[] }>();
  const stand = Object.fromEntries(names.map((n) => [n, `${MARK}${n}`])) as Record<Name, never>;
  const compile = (db: AnyDb) => {
    const query = build(db, stand).compile();
    const values = query.parameters.map((value) => {
      if (typeof value !== 'string' || !value.startsWith(MARK)) return { constant: value };
      return { name: value.slice(MARK.length) as Name };
    });
    return { sql: query.sql, values };
  };
  return async (db: AnyDb, params: Record<Name, unknown>): Promise<QueryResult<Row>> => {
    // Per dialect: a transaction shares its database's adapter.
    const key = db.getExecutor().adapter;
    let statement = compiled.get(key);
    if (statement === undefined) {
      statement = compile(db);
      compiled.set(key, statement);
    }
    const values = statement.values.map((v) => ('name' in v ? params[v.name] : v.constant));
    return db.executeQuery(CompiledQuery.raw(statement.sql, values) as CompiledQuery<Row>);
  };
}
