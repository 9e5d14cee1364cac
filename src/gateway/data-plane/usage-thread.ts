import { Worker } from 'node:worker_threads';

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
    worker.postMessage({ id, rows: `[${batch.join(',')}]` });
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
    worker.on('message', (reply: { id: number; error?: string }) => {
      const waiting = this.#pending.get(reply.id);
      if (!waiting) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      if (reply.error === undefined) waiting.resolve();
      else waiting.reject(new Error(reply.error));
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
