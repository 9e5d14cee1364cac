import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

export interface IdleRssOptions {
  /** The entry script, as `npm run start:*` runs it (src/auth/main.ts). */
  entry: string;
  /** The environment, besides PATH and a fresh DATA_DIR; nothing else of the caller's leaks in. */
  env?: Record<string, string>;
  /** A stdout line matching this means start-up is over (default: a "listening on" log line). */
  ready?: RegExp;
  /** Idle time after start-up before reading (default 2 s: lazy work and the first GC have run). */
  settleMs?: number;
}

export interface IdleRss {
  entry: string;
  /** Resident set size after start-up and the idle time, in bytes (VmRSS of /proc/<pid>/status). */
  rssBytes: number;
  /** From spawn to the ready line. */
  startMs: number;
}

/**
 * Starts `entry` with Node (this process's binary) on a fresh DATA_DIR
 * (SQLite, development secrets), waits for its ready line and `settleMs` of
 * idleness, reads its resident memory, then stops it with SIGTERM. Linux only
 * (it reads /proc).
 */
export async function measureIdleRss(options: IdleRssOptions): Promise<IdleRss> {
  const dataDir = mkdtempSync(join(tmpdir(), 'idle-rss-'));
  const started = performance.now();
  const child = spawn(process.execPath, [resolve(options.entry)], {
    env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, LOG_LEVEL: 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  try {
    const ready = options.ready ?? /listening on/;
    const isReady = await new Promise<boolean>((done) => {
      const timer = setTimeout(() => done(false), 30_000);
      createInterface({ input: child.stdout }).on('line', (line) => {
        if (ready.test(line)) {
          clearTimeout(timer);
          done(true);
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        done(false);
      });
    });
    if (!isReady) throw new Error(`${options.entry} did not start: ${stderr}`);
    const startMs = performance.now() - started;
    await sleep(options.settleMs ?? 2000);
    const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
    return { entry: options.entry, rssBytes: kb * 1024, startMs };
  } finally {
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** `node bench/lib/idle-rss.ts src/auth/main.ts [more entries]`: one line per entry, in MB. */
if (import.meta.main) {
  for (const entry of process.argv.slice(2)) {
    const { rssBytes, startMs } = await measureIdleRss({ entry, env: { AUTH_PORT: '0', GATEWAY_PORT: '0' } });
    process.stdout.write(`${entry}: ${(rssBytes / 1e6).toFixed(1)} MB idle RSS (started in ${Math.round(startMs)} ms)\n`);
  }
}
