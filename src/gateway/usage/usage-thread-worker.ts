import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Kysely } from 'kysely';
import { nodeSqliteDialect, SqliteWriter } from '../../platform/sqlite-dialect.ts';
import type { GatewayTables } from '../schema.ts';
import { decodeUsageRow } from './usage-row-json.ts';
import { writeUsageBatch } from './usage-writer.ts';

/**
 * The body of the usage thread (usage-thread.ts): its own write connection
 * to the gateway's SQLite file, with the same pragmas as the main one and
 * no checkpoint thread of its own (the main writer's thread checkpoints
 * the whole file). Each batch is written by the same code as on PostgreSQL
 * (writeUsageBatch), in transactions of at most TRANSACTION_RECORDS
 * records. A batch cut short by a failure is safe to write again: stored
 * records are skipped and not counted twice in the rollups.
 */
/**
 * The default batch (GATEWAY_USAGE_BATCH_SIZE) in one transaction. Each
 * transaction has a fixed cost (its commit writes the last page of each of
 * the table's B-trees and the rollup rows it updates, and the checkpoint
 * thread copies them back), so fewer, larger ones cost less per record:
 * against 128 records per transaction, this thread and the checkpoint
 * thread used 3 to 4.3 µs (12 to 15 %) less CPU per call in three
 * interleaved runs of benchmark 5's load (calls per second: -1 to +11 %,
 * within the shared machine's noise). The price: the write lock is held
 * longer, measured under that load on two busy cores at 10 ms (median) and
 * 20 ms (90th percentile) per transaction, 320 records on average; a
 * control-plane write on the main connection (a signup, a key, a setting;
 * never a call's path) waits for it, on the event loop, so the calls in
 * flight then wait as long, once per such write.
 */
const TRANSACTION_RECORDS = 500;
/** How much nicer than the process this thread runs (lowerPriority). */
const USAGE_THREAD_NICENESS = 10;

const { path } = workerData as { path: string };
const writer = new SqliteWriter(path, { checkpoints: false });
// The multi-row inserts and upserts of a batch may fail halfway inside its transaction, so each keeps the pages it
// changes in a statement journal (to undo just that statement). By default a journal past 64 KiB goes to a temporary
// file, a write system call per page: about a sixth of this thread's CPU per record (21.8 against 17.5 µs, measured on
// batches of 128 records). In memory it is a copy of each page the statement changes, freed when the statement ends.
writer.connection.exec('PRAGMA temp_store = MEMORY');
const db = new Kysely<GatewayTables>({ dialect: nodeSqliteDialect(writer) });
lowerPriority();
const port = parentPort!;

let queue = Promise.resolve();
port.on('message', (message: { id: number; rows: string[] } | 'close') => {
  queue = queue.then(async () => {
    if (message === 'close') {
      await db.destroy();
      writer.close();
      port.close();
      return;
    }
    try {
      const batch = message.rows.map(decodeUsageRow);
      for (let at = 0; at < batch.length; at += TRANSACTION_RECORDS) {
        await writeUsageBatch(db, batch.slice(at, at + TRANSACTION_RECORDS));
      }
      port.postMessage({ id: message.id });
    } catch (err) {
      // The codes cross too: the usage writer tells a refused record from a database that cannot write (usage-isolation.ts).
      const { code, errcode } = err as { code?: unknown; errcode?: unknown };
      port.postMessage({
        id: message.id,
        error: (err as Error).message,
        code: typeof code === 'string' ? code : undefined,
        errcode: typeof errcode === 'number' ? errcode : undefined,
      });
    }
  });
});

/**
 * This thread yields to the one that answers calls: its nice value 10 above
 * the process's (Linux, where a thread's id is a pid to setpriority;
 * elsewhere, or refused, it stays as it is). A batch's transaction is a
 * burst of several milliseconds of CPU, and on a machine with few cores the
 * event loop, woken by a client or a provider meanwhile, waited for a core
 * behind it. Measured at 10 connections on a 20 ms provider (benchmark 5's
 * latency load, two cores, two interleaved runs of 6 and 8 slices): p99
 * 29.13 -> 27.74 and 27.87 -> 27.07 ms (p99.9: 42.05 -> 43.38 and 41.70 ->
 * 35.41 ms). It still gets its
 * share: under 30 s of saturating load (about 5,000 calls/s) the backlog
 * never reached one batch. A process cannot take that priority back without
 * privileges, so it is set once, for the thread's life.
 */
function lowerPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, Math.min(19, getPriority(tid) + USAGE_THREAD_NICENESS));
  } catch {
    // Not Linux, or not allowed: the thread runs at the process's priority.
  }
}
