import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { UsageRecordRow } from '../schema.ts';

/** Journals alive in this process (tests run several gateways in one). */
const OPEN_HERE = new Set<string>();

/** A journal file left by a gateway that stopped without writing its records, and the records it holds. */
export interface Orphan {
  path: string;
  rows: UsageRecordRow[];
}

/**
 * The usage records of calls already answered but not yet in the database,
 * on local disk: each record is appended (one JSON line, a synchronous
 * write) before the call's answer leaves, so a process killed with -9
 * loses none of them. Records go to segment files named after the host,
 * the process and this journal; the usage writer seals the current
 * segment when it starts a flush and deletes it once every record in it
 * is written. A gateway starting on the same data directory adopts the
 * segments of a process that is gone (same host, pid not running, or its
 * own pid from an earlier life, as in a container) and writes them; the
 * insert ignores request ids already there, so a record written twice is
 * kept once.
 *
 * A write that fails (disk full) is logged and the call goes on: the
 * record is still queued for the database, only its crash safety is lost.
 */
export class UsageJournal {
  readonly #dir: string;
  readonly #log: Logger;
  readonly #name: string;
  #segment = 0;
  #fd: number | undefined;
  #path: string | undefined;
  #failing = false;

  constructor(options: { dir: string; log: Logger }) {
    this.#dir = options.dir;
    this.#log = options.log;
    mkdirSync(this.#dir, { recursive: true });
    this.#name = `usage~${encodeURIComponent(hostname())}~${process.pid}~${randomBytes(6).toString('hex')}`;
    OPEN_HERE.add(this.#name);
  }

  /** Appends one record; synchronous, so it is on disk (in the OS's cache) before the caller answers. */
  append(row: UsageRecordRow): void {
    try {
      if (this.#fd === undefined) {
        this.#path = join(this.#dir, `${this.#name}~${++this.#segment}.jsonl`);
        this.#fd = openSync(this.#path, 'a', 0o600);
      }
      writeSync(this.#fd, `${JSON.stringify(row)}\n`);
      this.#failing = false;
    } catch (err) {
      if (!this.#failing) this.#log.error({ err: (err as Error).message, dir: this.#dir }, 'usage journal: a record could not be written to disk; it stays queued in memory only');
      this.#failing = true;
    }
  }

  /** Closes the current segment and returns its path (undefined when nothing was appended since the last seal). */
  seal(): string | undefined {
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
          rows.push(JSON.parse(line) as UsageRecordRow);
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
