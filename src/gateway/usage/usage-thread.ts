import { Worker } from 'node:worker_threads';

/**
 * The thread that writes the usage writer's batches when the gateway's
 * database is a SQLite file (usage-thread-worker.ts): a second write
 * connection to the same file, so that inserting the records, their
 * indexes and rollups, and committing them (about a fifth of the CPU a
 * call cost the event loop: 224 against 176 µs measured here) happens off
 * the thread that answers calls. On that thread each statement ran
 * synchronously and stood every call in flight still for up to a
 * millisecond and a half.
 *
 * Records cross as their JSON, which the usage writer made once for the
 * journal as well: copying a string is a memory copy, where structured
 * cloning the row objects cost about 2.4 µs a row on the event loop (a
 * batch of 450 at once stood every call in flight still for a
 * millisecond; sent in parts of 64 rows, one per turn, it still moved the
 * p99 at 10 connections by about 2 ms against the floor, +2.48 ms against
 * +0.57 with strings). The batch goes as the array of those strings, not
 * joined into one JSON array first: at 10 connections on a 20 ms provider
 * (about 185 records a batch) the event loop spent 0.18 ms per batch on
 * handing it over, against 0.64 ms to join and send one string (mean of
 * 87 and 73 batches, one run each); batches of 500 sent in a loop to an
 * idle thread, 0.14 to 0.18 against 0.97 to 1.16 ms (the joined string,
 * hundreds of KiB, is allocated afresh each time, then copied again).
 *
 * Started on the first batch, so an idle gateway pays nothing for it;
 * started again on the next batch if it ever dies (the batch it held fails
 * and the writer retries it). `close` ends it; the writer calls it last.
 */
export class UsageThread {
  readonly #path: string;
  #worker: Worker | undefined;
  #nextId = 0;
  readonly #pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

  constructor(path: string) {
    this.#path = path;
  }

  /**
   * Writes one batch, the JSON of each record (usage-writer.ts's
   * writeUsageBatch, on the thread); rejects with the thread's error.
   */
  write(batch: readonly string[]): Promise<void> {
    const worker = this.#started();
    const id = ++this.#nextId;
    const written = new Promise<void>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // A write in progress keeps the process alive; an idle thread never does.
      if (this.#pending.size === 1) worker.ref();
    });
    worker.postMessage({ id, rows: batch });
    return written;
  }

  /** Ends the thread (its connection closed) once it has finished the batch in hand; a second call does nothing. */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    this.#worker = undefined;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.ref();
    worker.postMessage('close');
    await exited;
  }

  #started(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./usage-thread-worker.ts', import.meta.url), { workerData: { path: this.#path } });
    worker.unref();
    worker.on('message', (reply: { id: number; error?: string; code?: string; errcode?: number }) => {
      const waiting = this.#pending.get(reply.id);
      if (!waiting) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      if (reply.error === undefined) waiting.resolve();
      else waiting.reject(Object.assign(new Error(reply.error), { code: reply.code, errcode: reply.errcode }));
    });
    const stopped = (why: string) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const waiting of this.#pending.values()) waiting.reject(new Error(why));
      this.#pending.clear();
    };
    worker.on('error', (err) => stopped(`the usage thread failed: ${err.message}`));
    worker.on('exit', (code) => stopped(`the usage thread stopped (exit code ${code})`));
    this.#worker = worker;
    return worker;
  }
}
