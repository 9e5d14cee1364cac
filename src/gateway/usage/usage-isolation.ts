/**
 * What the usage writer does when a batch fails: tell a record the database
 * refuses (a value out of range, a null where none may be) from a database
 * that cannot write anything now (down, full, busy), and in the first case
 * find the refused records by writing the batch again in halves, so that
 * the others are written and one bad record no longer holds every record
 * behind it at the head of the queue.
 */

/** Why a write failed, as far as the error tells. */
export type FailureKind = 'record' | 'database' | 'unknown';

/** SQLite's primary result codes for a value a statement refused: SQLITE_TOOBIG, SQLITE_CONSTRAINT, SQLITE_MISMATCH. */
const SQLITE_RECORD_CODES = new Set([18, 19, 20]);

/**
 * - `record`: the database refused a value: PostgreSQL's SQLSTATE classes 22
 *   (data exception: out of range, invalid text) and 23 (integrity: a null
 *   in a NOT NULL column); SQLite's constraint, mismatch and too-big codes;
 * - `database`: any other SQLSTATE, SQLite code or system error (ECONNREFUSED,
 *   ETIMEDOUT): nothing would be written now, whatever the records;
 * - `unknown`: an error without a code (a connection ended, the usage
 *   thread stopped, a driver unable to bind a value).
 */
export function failureKind(err: unknown): FailureKind {
  const { code, errcode } = (err ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof errcode === 'number') return SQLITE_RECORD_CODES.has(errcode & 0xff) ? 'record' : 'database';
  if (typeof code !== 'string') return 'unknown';
  if (/^[0-9A-Z]{5}$/.test(code)) return code.startsWith('22') || code.startsWith('23') ? 'record' : 'database';
  return 'database';
}

export interface Refused<T> {
  row: T;
  error: Error;
}

export interface Isolated<T> {
  /** Records that failed alone while the database was shown to work: set them aside. */
  refused: Refused<T>[];
  /** Records not written: put them back in the queue for the next try. */
  unwritten: T[];
}

/** Writes in one isolation at most (a batch of 500 with one bad record takes about 18). */
const MAX_WRITES = 128;

/**
 * Writes `batch`, which failed as a whole with `error`, again in halves,
 * depth first, down to single records. A record is refused when it failed
 * alone with a `record` error, or with an `unknown` one while another part
 * of the batch was written (the database works; that record does not). A
 * `database` error stops the search: what is not written goes back. Without
 * any part written, an `unknown` error gets as many writes as the depth of
 * the halving plus three, enough to reach the first part free of bad
 * records, however they lie, unless nearly all are bad. The writes are
 * bounded (MAX_WRITES); what was not tried goes back too, for the next try.
 */
export async function isolateRefused<T>(batch: readonly T[], error: unknown, write: (rows: T[]) => Promise<void>): Promise<Isolated<T>> {
  const unwritten: T[] = [];
  const suspects: Refused<T>[] = [];
  if (failureKind(error) === 'database') return { refused: [], unwritten: batch.slice() };
  if (batch.length === 1) suspects.push({ row: batch[0]!, error: asError(error) });
  const stack: T[][] = batch.length > 1 ? halves(batch).reverse() : [];
  const blindWrites = Math.ceil(Math.log2(batch.length)) + 3;
  let writes = 0;
  let wrote = false;
  let stopped = false;
  while (stack.length > 0) {
    const part = stack.pop()!;
    if (stopped || writes >= MAX_WRITES || (!wrote && writes >= blindWrites)) {
      unwritten.push(...part);
      continue;
    }
    writes++;
    try {
      await write(part);
      wrote = true;
    } catch (err) {
      if (failureKind(err) === 'database') {
        stopped = true;
        unwritten.push(...part);
      } else if (part.length === 1) suspects.push({ row: part[0]!, error: asError(err) });
      else stack.push(...halves(part).reverse());
    }
  }
  const refused: Refused<T>[] = [];
  for (const suspect of suspects) {
    if (failureKind(suspect.error) === 'record' || (wrote && !stopped)) refused.push(suspect);
    else unwritten.push(suspect.row);
  }
  return { refused, unwritten };
}

function halves<T>(rows: readonly T[]): [T[], T[]] {
  const middle = Math.ceil(rows.length / 2);
  return [rows.slice(0, middle), rows.slice(middle)];
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
