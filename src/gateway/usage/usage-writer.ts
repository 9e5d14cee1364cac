import { CompiledQuery } from 'kysely';
import type { Logger } from 'pino';
import { SqliteKysely } from '../../platform/db.ts';
import type { GatewayDb, UsageRecordRow } from '../schema.ts';
import { addStoredBodyBytes } from './stored-body-bytes.ts';
import { addToRollups } from './usage-rollups.ts';
import type { Orphan, UsageJournal } from './usage-journal.ts';
import { isolateRefused, type Refused } from './usage-isolation.ts';
import { decodeUsageRow, encodeUsageRow, USAGE_COLUMNS, usageValues } from './usage-row-json.ts';
import { UsageThread } from './usage-thread.ts';

export interface UsageWriterOptions {
  db: GatewayDb;
  log: Logger;
  /** A batch is written at least this often while records wait. */
  flushMs: number;
  /** A batch is written as soon as this many records wait. */
  batchSize: number;
  /** Records kept while the database is unreachable; past it the oldest are dropped (and counted). */
  maxBuffered?: number;
  onDropped?: (count: number) => void;
  /** Records the database refused, set aside (usage-isolation.ts). */
  onRejected?: (count: number) => void;
  /** Where each record is appended before its call is answered (crash safety); none: memory only. */
  journal?: UsageJournal | undefined;
}

/**
 * Usage records, written in batches off the hot path: `record` only queues.
 * One batch is one transaction: the records, and each key's last_used_at.
 * A failed batch is put back and retried on the next tick, but for the
 * records the database refuses (a value out of range): those are found by
 * writing the batch again in halves (usage-isolation.ts), logged, counted
 * and set aside in the journal's directory (usage-rejected.jsonl; without
 * a journal, only logged), so one bad record never holds the others back,
 * nor comes back at every start from the journal. close() writes
 * everything still queued (graceful shutdown loses nothing). With a
 * journal, `record` also appends the record to the journal, on disk once
 * {@link durable} resolves (a call's answer waits for it), so a
 * process killed before the flush loses nothing either: a segment of the
 * journal is deleted once all its records are written, and `recover`
 * writes the segments a killed gateway left.
 */
export class UsageWriter {
  readonly #options: UsageWriterOptions;
  /** Rows, or, when a usage thread writes them, their JSON (usage-row-json.ts; only this class reads the queue; #thread tells which). */
  #queue: (UsageRecordRow | string)[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;
  /** Records ever queued; with the queue's length, how many are written (or given up). */
  #enqueued = 0;
  /** Journal segments not yet deleted, each with the count of records queued when it was sealed. */
  #sealed: { path: string; through: number }[] = [];

  /** On a SQLite file, the thread that writes the batches (usage-thread.ts); none on PostgreSQL or in memory. */
  readonly #thread: UsageThread | undefined;

  constructor(options: UsageWriterOptions) {
    this.#options = options;
    const { db } = options;
    if (db instanceof SqliteKysely && db.reader) this.#thread = new UsageThread(db.path);
  }

  /**
   * Queues a record; `answered`: the call's answer has left already (a
   * stream), so it is journaled at once. The record is serialized once,
   * here, for both the journal and the usage thread.
   */
  record(row: UsageRecordRow, answered = false): void {
    const journal = this.#options.journal;
    if (!journal && !this.#thread) {
      this.#enqueue(row);
      return;
    }
    const json = encodeUsageRow(row);
    journal?.append(json, answered);
    this.#enqueue(this.#thread ? json : row);
  }

  /**
   * Resolves once every record recorded so far is in the journal on disk;
   * undefined when there is nothing to wait for (no journal, or nothing
   * pending). The data plane sends a call's answer only after it.
   */
  durable(): Promise<void> | undefined {
    return this.#options.journal?.durable();
  }

  #enqueue(row: UsageRecordRow | string): void {
    this.#queue.push(row);
    this.#enqueued++;
    // A flush under way writes every whole batch there is when it is done with the one in hand: nothing to start.
    if (this.#queue.length >= this.#options.batchSize) {
      if (!this.#flushing) void this.#flush(true);
    } else this.#armTimer();
  }

  /** The next flush of whatever waits, flushMs from now, unless one is due already. */
  #armTimer(): void {
    if (this.#timer || this.#closed || this.#queue.length === 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, this.#options.flushMs);
    this.#timer.unref();
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** Writes what is queued now (one batch at a time); resolves when the queue was empty or the write failed. */
  flush(): Promise<void> {
    return this.#flush(false);
  }

  /**
   * `full`: only whole batches (the batch size was reached), and what is
   * left waits for the timer. Records keep arriving while a batch is
   * written, and writing each time whatever had arrived meanwhile cut a busy
   * gateway's stream into a few full batches and many small ones: on SQLite
   * 77 records per transaction on average, against 119 with whole batches
   * (when the usage thread still cut them into transactions of 128), and
   * each transaction has a fixed cost (its commit, the rollup rows it
   * updates).
   */
  async #flush(full: boolean): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#queue.length === 0 || (full && this.#queue.length < this.#options.batchSize)) return;
    this.#flushing = this.#writeBatches(full).finally(() => {
      this.#flushing = undefined;
    });
    await this.#flushing;
    this.#armTimer();
  }

  /** Queues the records of journal segments a stopped gateway left (they are deleted once written); returns their count. */
  recover(orphans: readonly Orphan[]): number {
    let count = 0;
    for (const orphan of orphans) {
      for (const row of orphan.rows) this.#enqueue(this.#thread ? encodeUsageRow(row) : row);
      count += orphan.rows.length;
      this.#sealed.push({ path: orphan.path, through: this.#enqueued });
    }
    if (count > 0) void this.flush();
    return count;
  }

  async #writeBatches(full: boolean): Promise<void> {
    const journal = this.#options.journal;
    const sealed = journal?.seal();
    if (sealed) this.#sealed.push({ path: sealed, through: this.#enqueued });
    try {
      await this.#writeEach(full);
    } finally {
      this.#forgetWritten();
    }
  }

  /** Deletes the journal segments whose records are all written (the queue is in order: what left it is done). */
  #forgetWritten(): void {
    const done = this.#enqueued - this.#queue.length;
    while (this.#sealed.length > 0 && this.#sealed[0]!.through <= done) this.#options.journal?.remove(this.#sealed.shift()!.path);
  }

  async #writeEach(full: boolean): Promise<void> {
    while (this.#queue.length > 0 && (!full || this.#queue.length >= this.#options.batchSize)) {
      const batch = this.#queue.splice(0, this.#options.batchSize);
      try {
        await this.#write(batch);
      } catch (err) {
        const { refused, unwritten } = await isolateRefused(batch, err, (rows) => this.#write(rows));
        if (refused.length > 0) this.#setAside(refused);
        if (unwritten.length === 0) continue;
        this.#queue = unwritten.concat(this.#queue);
        this.#dropOverflow();
        this.#options.log.error({ err: (err as Error).message, queued: this.#queue.length }, 'usage records could not be written; will retry');
        this.#armTimer();
        return;
      }
    }
  }

  async #write(batch: (UsageRecordRow | string)[]): Promise<void> {
    if (this.#thread) await this.#thread.write(batch as string[]);
    else await writeUsageBatch(this.#options.db, batch as UsageRecordRow[]);
  }

  /** Logs each refused record (its ids and the database's reason, never its bodies), counts them, and keeps them on disk when there is a journal. */
  #setAside(refused: Refused<UsageRecordRow | string>[]): void {
    const lines: string[] = [];
    for (const { row, error } of refused) {
      const line = typeof row === 'string' ? row : encodeUsageRow(row);
      let record: UsageRecordRow | undefined;
      try {
        record = typeof row === 'string' ? decodeUsageRow(row) : row;
      } catch {
        record = undefined;
      }
      lines.push(line);
      this.#options.log.error(
        { err: error.message, request_id: record?.request_id, tenant_id: record?.tenant_id, key_id: record?.key_id, status: record?.status },
        'usage record refused by the database: set aside, the records beside it are written',
      );
    }
    const journal = this.#options.journal;
    const path = journal?.setAside(lines);
    if (path) this.#options.log.warn({ path, records: lines.length }, 'refused usage records kept on disk, one JSON array per line in USAGE_COLUMNS order');
    else if (!journal) this.#options.log.warn({ records: lines.length }, 'refused usage records dropped: there is no usage journal to keep them in');
    this.#options.onRejected?.(refused.length);
  }

  #dropOverflow(): void {
    const max = this.#options.maxBuffered ?? 100_000;
    const excess = this.#queue.length - max;
    if (excess > 0) {
      this.#queue.splice(0, excess);
      this.#options.onDropped?.(excess);
      this.#options.log.error({ dropped: excess }, 'usage records dropped: the database stayed unreachable and the buffer is full');
    }
  }

  /** Stops the timer and writes everything queued; a last failure is logged with the count lost. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // A database hiccup at shutdown gets a few more tries before anything is given up.
    for (let attempt = 0; attempt < 3; attempt++) {
      await this.flush();
      if (this.#queue.length === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
    }
    const journal = this.#options.journal;
    const last = journal?.close();
    if (last) this.#sealed.push({ path: last, through: this.#enqueued });
    this.#forgetWritten();
    await this.#thread?.close();
    if (this.#queue.length > 0) {
      this.#options.log.error(
        { queued: this.#queue.length, journaled: journal !== undefined },
        journal
          ? 'usage records could not be written before shutdown; they stay in the usage journal and are written at the next start'
          : 'usage records could not be written before shutdown',
      );
    }
  }
}

/**
 * One batch of the usage writer in one transaction: the records (with their
 * rollups) and each key's last_used_at, which never moves back. On a SQLite
 * file it runs on the usage thread's connection (usage-thread.ts), off the
 * event loop that answers calls; on PostgreSQL its statements are
 * asynchronous round trips.
 *
 * Almost every batch holds only records never stored: they are inserted
 * without `RETURNING` (the usage thread's work per record, its collections
 * and the checkpoints included: 9.1 against 10.6 µs of CPU with it, median
 * of five runs of 40,000 records each), each chunk's
 * count of inserted rows checked. A chunk that inserted fewer than it held
 * met a record already stored (a journal replayed after a crash); then the
 * whole transaction is undone and the batch written again with
 * {@link insertUsageRecords}, which counts only what it inserted.
 */
export async function writeUsageBatch(db: GatewayDb, batch: readonly UsageRecordRow[]): Promise<void> {
  try {
    await writeBatchOnce(db, batch, true);
  } catch (err) {
    if (!(err instanceof AlreadyStored)) throw err;
    await writeBatchOnce(db, batch, false);
  }
}

/** Thrown inside a batch's transaction, to undo it, when `allNew` was wrong. */
class AlreadyStored extends Error {}

async function writeBatchOnce(db: GatewayDb, batch: readonly UsageRecordRow[], allNew: boolean): Promise<void> {
  const lastUsed = new Map<string, number>();
  for (const row of batch) lastUsed.set(row.key_id, Math.max(lastUsed.get(row.key_id) ?? 0, row.created_at));
  await db.transaction().execute(async (trx) => {
    if (allNew) await insertNewUsageRecords(trx, batch);
    else await insertUsageRecords(trx, batch);
    // In key order, as the rollups are: two replicas' batches lock the same rows in the same order.
    for (const [id, at] of [...lastUsed].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      await trx
        .updateTable('api_keys')
        .set({ last_used_at: at })
        .where('id', '=', id)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
        .execute();
    }
  });
}

/**
 * Inserts usage records and adds those it inserted to the usage rollups
 * (usage-rollups.ts), in the caller's transaction: a record already stored
 * (a replay of the usage journal, another replica's write) is skipped by
 * `ON CONFLICT DO NOTHING` and, being absent from `RETURNING`, not counted
 * again. Returns how many were inserted. The usage writer's batches go
 * through it (or through insertNewUsageRecords, which falls back to it);
 * so must anything else that writes records.
 */
export async function insertUsageRecords(db: GatewayDb, records: readonly UsageRecordRow[]): Promise<number> {
  if (!db.isTransaction) return db.transaction().execute((trx) => insertUsageRecords(trx, records));
  const inserted = new Set<string>();
  for (const rows of fixedChunks(records)) for (const id of (await insertRows(db, rows, true)) as string[]) inserted.add(id);
  // A batch may hold one request_id twice (a journal replayed beside the live queue): the first is the one inserted.
  const added = records.filter((r) => inserted.delete(r.request_id));
  await addToRollups(db, added);
  await addStoredBodyBytes(db, added);
  return added.length;
}

/**
 * Inserts records none of which is stored yet, and adds them all to the
 * rollups, in the caller's transaction; throws AlreadyStored, for the
 * caller to undo the transaction, as soon as a statement inserted fewer
 * rows than it held.
 */
async function insertNewUsageRecords(db: GatewayDb, records: readonly UsageRecordRow[]): Promise<void> {
  for (const rows of fixedChunks(records)) {
    if ((await insertRows(db, rows, false)) !== rows.length) throw new AlreadyStored('a usage record of the batch is stored already');
  }
  await addToRollups(db, records);
  await addStoredBodyBytes(db, records);
}

/** Statement sizes, largest first: every multi-row insert has one of these row counts. */
const CHUNK_SIZES = [64, 16, 4, 1];

/**
 * A batch cut into chunks of a few fixed sizes. Each distinct row count is a
 * distinct SQL text, and both the SQLite dialect and PostgreSQL keep
 * prepared statements per text: batches of every size from 1 to 500 would
 * keep hundreds of large statements (a 500-row insert compiles to tens of
 * thousands of VM instructions), which grew the gateway's memory by tens of
 * MiB per 100,000 calls. Four sizes bound that to four statements per form
 * (with RETURNING and without: insertRows), and as many per rollup table.
 */
export function fixedChunks<T>(rows: readonly T[]): T[][] {
  const chunks: T[][] = [];
  let at = 0;
  for (const size of CHUNK_SIZES) {
    while (rows.length - at >= size) {
      chunks.push(rows.slice(at, at + size));
      at += size;
    }
  }
  return chunks;
}

/** The SQL of an insert of `size` rows, per dialect (the adapter object) and with or without RETURNING: built with Kysely once, then only bound. */
const insertSql = new WeakMap<object, Map<string, string>>();

/**
 * Inserts rows with one statement whose SQL is compiled once per chunk size:
 * building and compiling a 64-row insert with Kysely costs more than SQLite
 * takes to run it. Values are bound row after row, in USAGE_COLUMNS order
 * (usage-row-json.ts), as the compiled placeholders are laid out (Kysely
 * numbers them row-major). `returning`: the ids of the rows inserted, else
 * how many were.
 */
async function insertRows(db: GatewayDb, rows: readonly UsageRecordRow[], returning: boolean): Promise<string[] | number> {
  const adapter = db.getExecutor().adapter;
  let texts = insertSql.get(adapter);
  if (!texts) {
    texts = new Map();
    insertSql.set(adapter, texts);
  }
  const id = returning ? `${rows.length} returning` : String(rows.length);
  let text = texts.get(id);
  if (text === undefined) {
    const template = Object.fromEntries(USAGE_COLUMNS.map((c) => [c, 0])) as unknown as UsageRecordRow;
    const insert = db
      .insertInto('usage_records')
      .values(rows.map(() => template))
      .onConflict((c) => c.column('request_id').doNothing());
    text = (returning ? insert.returning('request_id') : insert).compile().sql;
    texts.set(id, text);
  }
  const values: unknown[] = [];
  for (const row of rows) values.push(...usageValues(row));
  const result = await db.executeQuery<{ request_id: string }>(CompiledQuery.raw(text, values));
  return returning ? result.rows.map((r) => r.request_id) : Number(result.numAffectedRows ?? -1);
}
