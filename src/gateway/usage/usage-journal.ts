import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { UsageRecordRow } from '../schema.ts';
import { decodeUsageRow } from './usage-row-json.ts';

/** Where refused records go (setAside); not a segment: `orphans` skips it. */
export const REJECTED_FILE = 'usage-rejected.jsonl';

/** Journals alive in this process (tests run several gateways in one). */
const OPEN_HERE = new Set<string>();

/** A journal file left by a gateway that stopped without writing its records, and the records it holds. */
export interface Orphan {
  path: string;
  rows: UsageRecordRow[];
}

/**
 * The usage records of calls already answered but not yet in the database,
 * on local disk, so that a process killed with -9 loses none of them. Each
 * record is appended to a buffer; the buffer goes to the file in one
 * synchronous write once the event loop has handled what it had (at its next
 * check phase: every call completed in the same turn shares the write), or
 * at once when the usage writer seals the segment. A call's answer waits for
 * that write ({@link durable}): under load one write per call cost about
 * 30 µs of CPU (the file system's journal, busy with the database's
 * checkpoints, makes each append slow), one write per turn a fraction. A
 * stream's record is written at once, as the stream ends: its answer has
 * left already.
 * Records go to segment files named after the host, the process and this
 * journal; the usage writer seals the current segment when it starts a
 * flush and deletes it once every record in it is written. A gateway
 * starting on the same data directory adopts the segments of a process that
 * is gone (same host, pid not running, or its own pid from an earlier life,
 * as in a container) and writes them; the insert ignores request ids already
 * there, so a record written twice is kept once.
 *
 * A write that fails (disk full) is logged and the calls go on: the records
 * are still queued for the database, only their crash safety is lost.
 */
export class UsageJournal {
  readonly #dir: string;
  readonly #log: Logger;
  readonly #name: string;
  #segment = 0;
  #fd: number | undefined;
  #path: string | undefined;
  #failing = false;
  /** Lines appended and not yet written. */
  #pending = '';
  /** Resolved by the next write; made on the first {@link durable} call of a turn. */
  #written: { promise: Promise<void>; resolve: () => void } | undefined;
  #scheduled = false;
  readonly #writeNow = () => {
    this.#scheduled = false;
    this.#write();
  };

  constructor(options: { dir: string; log: Logger }) {
    this.#dir = options.dir;
    this.#log = options.log;
    mkdirSync(this.#dir, { recursive: true });
    this.#name = `usage~${encodeURIComponent(hostname())}~${process.pid}~${randomBytes(6).toString('hex')}`;
    OPEN_HERE.add(this.#name);
  }

  /**
   * Appends one record, as its JSON line (usage-row-json.ts: the usage
   * writer serializes each record once, for the journal and the usage
   * thread); it is on disk (in the OS's cache) once {@link durable}
   * resolves, or at once with `now` (with whatever else is pending): for a
   * call whose answer has already left, a stream, which cannot wait for it.
   */
  append(json: string, now = false): void {
    this.#pending += `${json}\n`;
    if (now) this.#write();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#writeNow);
    }
  }

  /**
   * Resolves once every record appended so far is written to the file;
   * undefined when nothing waits (nothing to await). A call's answer is
   * sent only after it: what was answered is on disk.
   */
  durable(): Promise<void> | undefined {
    if (this.#pending === '') return undefined;
    if (!this.#written) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.#written = { promise, resolve };
    }
    return this.#written.promise;
  }

  /** Writes the pending lines in one synchronous write, then wakes whoever waits for them. */
  #write(): void {
    const lines = this.#pending;
    const waiting = this.#written;
    this.#pending = '';
    this.#written = undefined;
    if (lines !== '') {
      try {
        if (this.#fd === undefined) {
          this.#path = join(this.#dir, `${this.#name}~${++this.#segment}.jsonl`);
          this.#fd = openSync(this.#path, 'a', 0o600);
        }
        writeSync(this.#fd, lines);
        this.#failing = false;
      } catch (err) {
        if (!this.#failing) this.#log.error({ err: (err as Error).message, dir: this.#dir }, 'usage journal: records could not be written to disk; they stay queued in memory only');
        this.#failing = true;
      }
    }
    waiting?.resolve();
  }

  /** Closes the current segment, after writing what is pending into it, and returns its path (undefined when nothing was appended since the last seal). */
  seal(): string | undefined {
    this.#write();
    if (this.#fd === undefined) return undefined;
    const path = this.#path;
    try {
      closeSync(this.#fd);
    } catch {
      // The descriptor is gone either way.
    }
    this.#fd = undefined;
    this.#path = undefined;
    return path;
  }

  /** Deletes a sealed segment whose records are all in the database. */
  remove(path: string): void {
    try {
      unlinkSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.#log.warn({ err: (err as Error).message, path }, 'usage journal: a written segment could not be deleted');
    }
  }

  /**
   * Appends records the database refused (usage-writer.ts), as their lines,
   * to `usage-rejected.jsonl` beside the segments, where an operator can
   * read them, fix them and insert them; recovery never reads that file.
   * Returns its path, or undefined when it could not be written (logged).
   */
  setAside(lines: readonly string[]): string | undefined {
    const path = join(this.#dir, REJECTED_FILE);
    try {
      appendFileSync(path, `${lines.join('\n')}\n`, { mode: 0o600 });
      return path;
    } catch (err) {
      this.#log.error({ err: (err as Error).message, path }, 'usage journal: refused usage records could not be set aside on disk; they are lost');
      return undefined;
    }
  }

  /** Stops journaling: the current segment is closed (and kept unless its records were all written). */
  close(): string | undefined {
    OPEN_HERE.delete(this.#name);
    return this.seal();
  }

  /**
   * The segments of gateways that are gone, with their records: on this
   * host, a process no longer running, or this process's pid from an
   * earlier life (a container restarted). Segments of other hosts are left
   * alone and named in a warning. A last line cut short by the kill is
   * skipped.
   */
  orphans(): Orphan[] {
    const host = encodeURIComponent(hostname());
    const found: Orphan[] = [];
    const foreign: string[] = [];
    for (const file of readdirSync(this.#dir)) {
      const parts = file.split('~');
      if (parts.length !== 5 || parts[0] !== 'usage' || !file.endsWith('.jsonl')) continue;
      const [, fileHost, pidText, instance] = parts as [string, string, string, string, string];
      const owner = `usage~${fileHost}~${pidText}~${instance}`;
      if (fileHost !== host) {
        foreign.push(file);
        continue;
      }
      const pid = Number(pidText);
      const gone = pid === process.pid ? !OPEN_HERE.has(owner) : !running(pid);
      if (!gone) continue;
      const path = join(this.#dir, file);
      const rows: UsageRecordRow[] = [];
      for (const line of readFileSync(path, 'utf8').split('\n')) {
        if (!line) continue;
        try {
          rows.push(decodeUsageRow(line));
        } catch {
          this.#log.warn({ path }, 'usage journal: a record cut short by the stop is skipped');
        }
      }
      found.push({ path, rows });
    }
    if (foreign.length) this.#log.warn({ dir: this.#dir, files: foreign }, 'usage journal: segments of another host are left alone (give each replica its own data directory)');
    return found;
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
