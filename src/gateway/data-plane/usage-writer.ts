import type { Logger } from 'pino';
import type { GatewayDb, UsageRecordRow } from '../schema.ts';

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
}

/**
 * Usage records, written in batches off the hot path: `record` only queues.
 * One batch is one transaction: the records, and each key's last_used_at.
 * A failed batch is put back and retried on the next tick. close() writes
 * everything still queued (graceful shutdown loses nothing).
 */
export class UsageWriter {
  readonly #options: UsageWriterOptions;
  #queue: UsageRecordRow[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;

  constructor(options: UsageWriterOptions) {
    this.#options = options;
  }

  record(row: UsageRecordRow): void {
    this.#queue.push(row);
    if (this.#queue.length >= this.#options.batchSize) void this.flush();
    else if (!this.#timer && !this.#closed) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.flush();
      }, this.#options.flushMs);
      this.#timer.unref();
    }
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** Writes what is queued now (one batch at a time); resolves when the queue was empty or the write failed. */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
    if (this.#queue.length === 0) return;
    this.#flushing = this.#writeBatches().finally(() => {
      this.#flushing = undefined;
    });
    await this.#flushing;
  }

  async #writeBatches(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#options.batchSize);
      try {
        await this.#write(batch);
      } catch (err) {
        this.#queue = batch.concat(this.#queue);
        this.#dropOverflow();
        this.#options.log.error({ err: (err as Error).message, queued: this.#queue.length }, 'usage records could not be written; will retry');
        if (!this.#timer && !this.#closed) {
          this.#timer = setTimeout(() => {
            this.#timer = undefined;
            void this.flush();
          }, this.#options.flushMs);
          this.#timer.unref();
        }
        return;
      }
    }
  }

  async #write(batch: UsageRecordRow[]): Promise<void> {
    const lastUsed = new Map<string, number>();
    for (const row of batch) lastUsed.set(row.key_id, Math.max(lastUsed.get(row.key_id) ?? 0, row.created_at));
    await this.#options.db.transaction().execute(async (trx) => {
      await trx.insertInto('usage_records').values(batch).onConflict((c) => c.column('request_id').doNothing()).execute();
      for (const [id, at] of lastUsed) {
        await trx
          .updateTable('api_keys')
          .set({ last_used_at: at })
          .where('id', '=', id)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
          .execute();
      }
    });
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
      if (this.#queue.length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
    }
    if (this.#queue.length > 0) {
      this.#options.log.error({ lost: this.#queue.length }, 'usage records could not be written before shutdown');
    }
  }
}
