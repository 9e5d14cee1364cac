import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * The body of the checkpoint thread started by sqlite-dialect.ts: its own
 * connection to the database file, copying the write-ahead log back into the
 * database with a PASSIVE checkpoint
 * (https://sqlite.org/c3ref/wal_checkpoint_v2.html), which never waits for
 * and never blocks the writer or the readers. The copying and its two fsyncs
 * (of the log before, of the database after) happen on this thread, off the
 * event loop that answers requests.
 *
 * While the log grows, every `busyIntervalMs`: small checkpoints, each a
 * short burst of copying and flushing. At 50 ms under the refresh
 * benchmark's writes, each checkpoint copied about 8 MiB and took about
 * 8 ms, and the request thread's commits slowed down meanwhile (about two
 * thirds of its commits over 0.5 ms fell inside one, while the thread was
 * busy a tenth of the time); at 5 ms each takes about 2 ms, and on a quiet
 * machine the refresh grant's p99 came closer to its p50 (docs/BENCHMARKS.md,
 * notes under 4b). When nothing was written since the last look, every
 * `intervalMs`: an idle service wakes this thread 20 times a second, not 200.
 *
 * Under sustained writes a checkpoint never quite catches up with the writer,
 * and the log restarts from its beginning only after one that did. So once
 * the log passes `restartPages`, this thread asks the writer to run one
 * itself, between two of its transactions, and meanwhile checkpoints every
 * millisecond or two, so that the writer finds only what it committed since
 * (usually well under a millisecond of copying); its next commit then
 * restarts the log.
 */
const { path, intervalMs, busyIntervalMs, restartPages } = workerData as {
  path: string;
  intervalMs: number;
  busyIntervalMs: number;
  restartPages: number;
};
const db = new DatabaseSync(path);
// In WAL mode NORMAL and FULL sync a checkpoint alike; this connection commits nothing.
db.exec('PRAGMA synchronous = NORMAL;');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const CATCH_UP_MS = 2;
/** Asked again if the log has not restarted by then (the writer found this thread checkpointing, say). */
const ASK_AGAIN_MS = 25;

let timer: NodeJS.Timeout | undefined;
let askedAt = 0;
/** The log's length in frames at the last look: unchanged means nothing was written meanwhile. */
let lastLog = 0;
function tick(): void {
  let log = 0;
  try {
    log = (checkpoint.get() as { log: number } | undefined)?.log ?? 0;
  } catch {
    // Busy (the writer's own checkpoint running) or the file gone at shutdown: the next tick tries again.
  }
  const restartDue = log >= restartPages;
  if (!restartDue) askedAt = 0;
  else if (performance.now() - askedAt >= ASK_AGAIN_MS) {
    askedAt = performance.now();
    parentPort?.postMessage('restart');
  }
  const writing = log !== lastLog;
  lastLog = log;
  timer = setTimeout(tick, restartDue ? CATCH_UP_MS : writing ? busyIntervalMs : intervalMs);
}
timer = setTimeout(tick, intervalMs);

parentPort?.on('message', (message) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  db.close();
  parentPort?.close();
});
