import { randomUUID } from 'node:crypto';
import type { Migration } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';
import { decryptWithAny, encrypt } from './crypto.ts';
import type { AnyDb, DialectName } from './db.ts';
import type { MailTransport } from './mail-transport.ts';
import type { Metrics } from './metrics.ts';

/**
 * Transactional outbox. A use case writes its email into `outbox` inside its
 * own transaction, so a committed change always has its email queued; the
 * worker below sends it later, with retries, across restarts.
 */
export const outboxMigration: Migration = {
  async up(db) {
    await db.schema
      .createTable('outbox')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('recipient', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('text_body', 'text', (c) => c.notNull())
      .addColumn('html_body', 'text')
      .addColumn('status', 'text', (c) => c.notNull()) // pending | sent | failed
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('lease_until', 'bigint')
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('sent_at', 'bigint')
      .execute();
    await db.schema.createIndex('outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute();
  },
};

export interface OutboxTable {
  id: string;
  kind: string;
  recipient: string;
  subject: string;
  text_body: string;
  html_body: string | null;
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  next_attempt_at: number;
  lease_until: number | null;
  last_error: string | null;
  created_at: number;
  sent_at: number | null;
}

export interface Email {
  kind: string;
  to: string;
  subject: string;
  text: string;
  html?: string;
}

/**
 * What writing to the outbox needs: the clock, and the AES-256-GCM key that
 * seals email bodies at rest. A body can hold a live bearer secret (a
 * verification link) for as long as the email waits, so a database dump or
 * backup alone must not yield it; the service hands its own key in (the
 * platform knows no service's settings).
 */
export interface OutboxContext {
  clock: Clock;
  key: Buffer;
}

/**
 * A sealed body: this marker, then base64url(iv | tag | ciphertext). The
 * associated data binds it to its row and field, so a body moved to another
 * row, or from text to html, no longer opens. Bodies without the marker were
 * written in plaintext before sealing existed (the worker still sends them).
 */
const SEALED = 'aes256gcm:';
const aad = (id: string, field: 'text' | 'html') => `outbox:${id}:${field}`;

export function sealBody(key: Buffer, id: string, field: 'text' | 'html', body: string): string {
  return SEALED + encrypt(key, body, aad(id, field));
}

/** Inverse of {@link sealBody} with the first of `keys` that opens it; throws when none does, or the row or field does not match. */
export function openBody(keys: readonly Buffer[], id: string, field: 'text' | 'html', stored: string): string {
  return stored.startsWith(SEALED) ? decryptWithAny(keys, stored.slice(SEALED.length), aad(id, field)).plaintext : stored;
}

/**
 * A body sealed again under `key` (a key rotation), or undefined when it is
 * already sealed under it (or was never sealed). Throws when none of `keys` opens it.
 */
export function resealBody(key: Buffer, keys: readonly Buffer[], id: string, field: 'text' | 'html', stored: string): string | undefined {
  if (!stored.startsWith(SEALED)) return undefined;
  const { plaintext, keyIndex } = decryptWithAny([key, ...keys], stored.slice(SEALED.length), aad(id, field));
  return keyIndex === 0 ? undefined : sealBody(key, id, field, plaintext);
}

/** Queues an email, its bodies sealed; call it with the use case's transaction. */
export async function enqueueEmail(db: AnyDb, outbox: OutboxContext, email: Email): Promise<string> {
  const id = randomUUID();
  const now = outbox.clock.now();
  await db
    .insertInto('outbox')
    .values({
      id,
      kind: email.kind,
      recipient: email.to,
      subject: email.subject,
      text_body: sealBody(outbox.key, id, 'text', email.text),
      html_body: email.html === undefined ? null : sealBody(outbox.key, id, 'html', email.html),
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
    })
    .execute();
  return id;
}

export interface OutboxWorkerOptions {
  db: AnyDb;
  dialect: DialectName;
  clock: Clock;
  /** Open the bodies {@link enqueueEmail} sealed: the current key, then any being retired. */
  keys: readonly Buffer[];
  transport: MailTransport;
  from: string;
  log: Logger;
  metrics: Metrics;
  pollMs: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** How long a claimed row stays invisible to other workers while it is being sent. */
  leaseMs?: number;
  batchSize?: number;
}

export interface OutboxWorker {
  start(): void;
  stop(): Promise<void>;
  /** Asks for a pass now (after a commit that queued mail). */
  wake(): void;
  /** Sends everything due now; resolves with how many rows it handled. */
  drain(): Promise<number>;
}

/** Delay before attempt `attempt + 1`: exponential from `base`, capped, with ±20% jitter. */
export function backoffDelay(attempt: number, baseMs: number, capMs: number, random = Math.random): number {
  const raw = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

export function outboxWorker(options: OutboxWorkerOptions): OutboxWorker {
  const { db, clock, log, metrics } = options;
  const leaseMs = options.leaseMs ?? 60_000;
  const batchSize = options.batchSize ?? 20;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  /** stop() is waiting for the pass under way: it ends after the current send. */
  let halting = false;
  let running: Promise<number> | undefined;
  let queued: Promise<number> | undefined;
  let lastGauge = 0;

  /** Claims due rows by setting a lease; SKIP LOCKED keeps PostgreSQL replicas off each other's rows. */
  async function claim(): Promise<OutboxTable[]> {
    const now = clock.now();
    let due = db
      .selectFrom('outbox')
      .select('id')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .orderBy('next_attempt_at')
      .limit(batchSize);
    if (options.dialect === 'postgres') due = due.forUpdate().skipLocked();
    // SQLite has one writer at a time, and an UPDATE takes the write lock even when it matches nothing: each poll
    // waited, synchronously (node:sqlite), for any transaction of another connection to the file to commit. The
    // gateway's usage thread holds it through each batch, so about once a second the event loop stood still for up
    // to 18 ms (measured under benchmark 5's load), every call in flight with it. A read takes no lock in WAL mode:
    // only when something is due is the lock taken to claim it.
    if (options.dialect !== 'postgres' && (await due.execute()).length === 0) return [];
    return db
      .updateTable('outbox')
      .set({ lease_until: now + leaseMs })
      .where('id', 'in', due)
      .returningAll()
      .execute() as Promise<OutboxTable[]>;
  }

  /**
   * After an attempt that did not send: the row is put back for a later one,
   * with exponential backoff, or, once its attempts are spent, marked failed
   * and its body wiped (a failed row is never sent again: like a sent one it
   * keeps only the envelope and the error). Counted in the metrics either way.
   */
  async function retryOrFail(row: OutboxTable, error: string): Promise<{ attempts: number; failed: boolean }> {
    const attempts = row.attempts + 1;
    const failed = attempts >= options.maxAttempts;
    await db
      .updateTable('outbox')
      .set({
        attempts,
        last_error: error,
        lease_until: null,
        status: failed ? 'failed' : 'pending',
        next_attempt_at: clock.now() + backoffDelay(attempts, options.backoffBaseMs, options.backoffCapMs),
        ...(failed ? { text_body: '', html_body: null } : {}),
      })
      .where('id', '=', row.id)
      .execute();
    (failed ? metrics.mailFailed : metrics.mailRetried).inc();
    return { attempts, failed };
  }

  /**
   * A body that does not open with this replica's keys is not sent. It may
   * open elsewhere: during a rolling change of the encryption key, a replica
   * still on the old key claims rows sealed under the new one (and the
   * reverse). So the row goes back with its body like a failed send, for
   * another replica (or this one restarted with the key) to take, and is
   * failed and wiped only once its attempts are spent. A body that never
   * opens (the key lost, a body moved from another row) ends that way.
   */
  async function unreadable(row: OutboxTable): Promise<void> {
    const { attempts, failed } = await retryOrFail(row, "the body does not open with this replica's encryption keys");
    if (failed) log.error({ outboxId: row.id, kind: row.kind, attempts }, 'email body does not decrypt (was the encryption key changed?); not sent, failed permanently');
    else log.warn({ outboxId: row.id, kind: row.kind, attempts }, "email body does not decrypt with this replica's keys; left for a replica that has the key, will retry");
  }

  async function deliver(row: OutboxTable): Promise<void> {
    let text: string;
    let html: string | undefined;
    try {
      text = openBody(options.keys, row.id, 'text', row.text_body);
      html = row.html_body ? openBody(options.keys, row.id, 'html', row.html_body) : undefined;
    } catch {
      return unreadable(row);
    }
    try {
      await options.transport.send({
        from: options.from,
        to: row.recipient,
        subject: row.subject,
        text,
        ...(html ? { html } : {}),
      });
      await db
        .updateTable('outbox')
        // The body may hold a bearer secret (a verification link): once sent, only the envelope is kept.
        .set({
          status: 'sent',
          sent_at: clock.now(),
          lease_until: null,
          attempts: row.attempts + 1,
          last_error: null,
          text_body: '',
          html_body: null,
        })
        .where('id', '=', row.id)
        .execute();
      metrics.mailSent.inc();
    } catch (err) {
      const message = String((err as Error)?.message ?? err).slice(0, 500);
      const { attempts, failed } = await retryOrFail(row, message);
      if (failed) log.error({ outboxId: row.id, kind: row.kind, attempts, error: message }, 'email failed permanently');
      else log.warn({ outboxId: row.id, kind: row.kind, attempts, error: message }, 'email send failed; will retry');
    }
  }

  async function updateGauge(): Promise<void> {
    const now = clock.now();
    if (now - lastGauge < 15_000) return;
    lastGauge = now;
    const rows = await db
      .selectFrom('outbox')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', 'in', ['pending', 'failed'])
      .groupBy('status')
      .execute();
    metrics.mailOutbox.reset();
    metrics.mailOutbox.set({ status: 'pending' }, 0);
    metrics.mailOutbox.set({ status: 'failed' }, 0);
    for (const r of rows) metrics.mailOutbox.set({ status: r.status }, Number(r.n));
  }

  /**
   * Sends what is due, batch after batch. Once stop() is called (a
   * shutdown), the send under way finishes and the rest of the claimed
   * batch is released at once, for another replica or the next start,
   * rather than the whole backlog holding the process up.
   */
  async function drainOnce(): Promise<number> {
    let handled = 0;
    while (!halting) {
      const rows = await claim();
      for (const [i, row] of rows.entries()) {
        if (halting) {
          await release(rows.slice(i));
          return handled;
        }
        await deliver(row);
        handled++;
      }
      if (rows.length < batchSize) break;
    }
    await updateGauge();
    return handled;
  }

  async function release(rows: readonly OutboxTable[]): Promise<void> {
    await db
      .updateTable('outbox')
      .set({ lease_until: null })
      .where('id', 'in', rows.map((r) => r.id))
      .execute();
  }

  /**
   * One pass at a time. A call during a pass queues exactly one more pass
   * (shared by every caller meanwhile), so what a caller committed before
   * calling is always covered by the pass it awaits.
   */
  function drain(): Promise<number> {
    if (queued) return queued;
    if (running) {
      queued = running.then(() => {
        queued = undefined;
        return startPass();
      });
      return queued;
    }
    return startPass();
  }

  function startPass(): Promise<number> {
    running = drainOnce()
      .catch((err: unknown) => {
        log.error({ err }, 'outbox pass failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  function loop(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void drain().finally(loop);
    }, options.pollMs);
    timer.unref();
  }

  return {
    start() {
      stopped = false;
      loop();
    },
    async stop() {
      stopped = true;
      halting = true;
      clearTimeout(timer);
      try {
        await queued;
        await running;
      } finally {
        halting = false;
      }
    },
    wake() {
      if (!stopped) void drain();
    },
    drain,
  };
}
