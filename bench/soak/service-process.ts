import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { inspectorAddress } from '../../test/reliability/process-memory.ts';

/**
 * A service started from its entry point as `npm run start:auth` and
 * `npm run start:gateway` run it (src/auth/main.ts, src/gateway/main.ts: its
 * migrations, workers, signal handling and pino log on stdout), in its own
 * process, with only the environment given (plus PATH). Ready once /readyz
 * answers 200. Its log is read line by line: lines are counted by level, and
 * warnings and errors are echoed to stderr with the service's name, so that
 * a soak can report every one of them.
 */
export interface ServiceProcess {
  name: string;
  pid: number;
  url: string;
  /** Log lines so far, by pino level name (info, warn, error, fatal...), lines that are not JSON as "text". */
  logCounts(): Record<string, number>;
  /** The first lines of level warn or above (at most 20), as printed. */
  notableLines(): string[];
  /** Started with `inspect`: the address of its inspector (how the soak forces a full GC in it), else undefined. */
  inspector: string | undefined;
  /** SIGTERM, then SIGKILL after 10 s; resolves with the exit code (null when killed). */
  stop(): Promise<number | null>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
const NOTABLE_KEEP = 20;

/** A port free on 127.0.0.1 right now: the service's public URL (the OAuth issuer and its redirects) must be known before it starts. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/**
 * `inspect`: with the inspector on a loopback port the kernel picks (its
 * lines on stderr, the address, a help link and one line per session, are
 * read, not counted as errors); nothing attaches to it but the soak's
 * forced GCs.
 */
export async function startService(name: string, entry: URL, url: string, env: Record<string, string>, inspect = false): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [...(inspect ? ['--inspect=127.0.0.1:0'] : []), fileURLToPath(entry)], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      live.delete(child);
      exitCode = code;
      resolve(code);
    });
  });
  const counts: Record<string, number> = {};
  const notable: string[] = [];
  const note = (level: string, line: string) => {
    counts[level] = (counts[level] ?? 0) + 1;
    if (level === 'info' || level === 'debug' || level === 'trace') return;
    if (notable.length < NOTABLE_KEEP) notable.push(line.slice(0, 500));
    process.stderr.write(`[${name}] ${line.slice(0, 2000)}\n`);
  };
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let level = 'text';
    try {
      level = LEVELS[(JSON.parse(line) as { level?: number }).level ?? 0] ?? 'text';
    } catch {
      // not a pino line
    }
    note(level, line);
  });
  let inspector: string | undefined;
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (inspect) {
      const address = inspectorAddress(line);
      if (address && inspector === undefined) {
        inspector = address;
        return;
      }
      // The inspector's own lines: its help link, and a session attached and closed at each forced GC.
      if (/^(For help, see: https:\/\/nodejs\.org\/|Debugger attached\.$|Debugger ending on ws:\/\/)/.test(line)) return;
    }
    note('stderr', line);
  });

  const until = performance.now() + 60_000;
  for (;;) {
    if (exitCode !== undefined) throw new Error(`${name} exited with code ${exitCode} before it was ready: ${notable.join(' | ')}`);
    if (performance.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`${name}: /readyz not 200 after 60 s`);
    }
    const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ready) break;
    await sleep(100);
  }

  return {
    name,
    pid: child.pid!,
    url,
    logCounts: () => ({ ...counts }),
    notableLines: () => [...notable],
    get inspector() {
      return inspector;
    },
    async stop() {
      if (exitCode !== undefined) return exitCode;
      child.kill('SIGTERM');
      const late = await Promise.race([exited.then(() => false), sleep(10_000).then(() => true)]);
      if (late) child.kill('SIGKILL');
      return exited;
    },
  };
}
