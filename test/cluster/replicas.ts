import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { POSTGRES_URL, REDIS_URL } from '../helpers/env.ts';

/**
 * Replicas of a service as production runs them: each its own process
 * (`node src/auth/main.ts`, `node src/gateway/main.ts`, as `npm run start:*`
 * runs it), configured by environment variables alone, on a port the kernel
 * picks (read back from its "listening on" line), with a DATA_DIR of its own
 * (a replica's local disk: the gateway's usage journal is there). The
 * suite's replicas share one PostgreSQL schema per service and one Redis.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = { auth: 'src/auth/main.ts', gateway: 'src/gateway/main.ts' } as const;
const PORT_SETTING = { auth: 'AUTH_PORT', gateway: 'GATEWAY_PORT' } as const;
const HOST_SETTING = { auth: 'AUTH_HOST', gateway: 'GATEWAY_HOST' } as const;
/** Production serves /metrics only behind a token (or on a port of its own): the replicas get this one, and metric() sends it. */
const METRICS_TOKEN_SETTING = { auth: 'AUTH_METRICS_TOKEN', gateway: 'GATEWAY_METRICS_TOKEN' } as const;
const METRICS_TOKEN = 'cluster-metrics-token-0123456789-abcdefgh';

export type ServiceName = keyof typeof ENTRY;

const running = new Set<ChildProcess>();
// However the test file ends (a hook that never ran included), no replica outlives it.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Why a cluster file is skipped, or false when it runs. */
export const CLUSTER_SKIP = POSTGRES_URL && REDIS_URL ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL: the several-replicas suite is skipped';

/**
 * The replicas' Redis: the test server's database 7. Other suites on this
 * machine use database 0 with fixed keys (per-IP buckets of 127.0.0.1 and of
 * documentation addresses); these replicas neither see nor disturb them.
 */
export function clusterRedisUrl(): string {
  const url = new URL(REDIS_URL!);
  url.pathname = '/7';
  return url.toString();
}

/** A pino record as the services write it in production (JSON on stdout). */
export interface LogRecord {
  level: number;
  time: number;
  msg: string;
  [field: string]: unknown;
}

export interface Replica {
  /** `auth-a`, `gateway-b`: how failure messages name it. */
  name: string;
  /** http://127.0.0.1:<port> */
  url: string;
  /** When its "listening on" line arrived (its workers and job timers were started just before). */
  listeningAt: number;
  /** Every line it wrote, stdout and stderr, oldest first. */
  lines: string[];
  /** Its JSON log records. */
  records(): LogRecord[];
  /** GET /metrics (with the replicas' metrics token): the value of one sample (0 when absent), e.g. `auth_rate_limited_total{bucket="login"}`. */
  metric(sample: string): Promise<number>;
}

export interface Replicas {
  list: Replica[];
  /** The last lines of every replica, for a failure message. */
  output(lastLines?: number): string;
  /** SIGTERM to each (SIGKILL if it has not exited within 10 s); resolves when all have exited and their data directories are gone. */
  stop(): Promise<void>;
}

/**
 * Starts `count` replicas of `service` and resolves when every one is
 * listening. At once (they migrate the shared database concurrently, as the
 * replicas of a new deployment do), or with `oneByOne` each after the one
 * before is listening (a replica added to running ones): their periodic jobs'
 * timers then fire seconds apart within a tick. `env` is the whole
 * environment of each besides PATH: nothing of the test runner's leaks in. A
 * replica that exits before listening rejects the start with its output; the
 * others are stopped.
 */
export async function startReplicas(service: ServiceName, count: number, env: Record<string, string>, options: { oneByOne?: boolean } = {}): Promise<Replicas> {
  const children: { child: ChildProcess; exited: Promise<unknown>; dataDir: string }[] = [];
  const list: Replica[] = [];
  const replicas: Replicas = {
    list,
    output: (lastLines = 40) => list.map((r) => `--- ${r.name} (last ${lastLines} lines)\n${r.lines.slice(-lastLines).join('\n')}`).join('\n'),
    async stop() {
      await Promise.all(children.map(({ child, exited }) => stopChild(child, exited)));
      for (const { dataDir } of children) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const start = (i: number) => {
    const name = `${service}-${String.fromCharCode(97 + i)}`;
    const dataDir = mkdtempSync(join(tmpdir(), `${name}-`));
    const child = spawn(process.execPath, [ENTRY[service]], {
      cwd: ROOT,
      env: {
        PATH: process.env['PATH'] ?? '',
        DATA_DIR: dataDir,
        [PORT_SETTING[service]]: '0',
        [HOST_SETTING[service]]: '127.0.0.1',
        [METRICS_TOKEN_SETTING[service]]: METRICS_TOKEN,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    const exited = once(child, 'exit').finally(() => running.delete(child));
    children.push({ child, exited, dataDir });
    const lines: string[] = [];
    const replica: Replica = {
      name,
      url: '',
      listeningAt: 0,
      lines,
      records: () => lines.flatMap((line) => (line.startsWith('{') ? [JSON.parse(line) as LogRecord] : [])),
      async metric(sample) {
        const res = await fetch(`${replica.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
        if (!res.ok) throw new Error(`${replica.name} GET /metrics: ${res.status}`);
        const text = await res.text();
        const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
        return line ? Number(line.slice(sample.length + 1)) : 0;
      },
    };
    list.push(replica);
    createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line));
    return new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        lines.push(line);
        const address = replica.url ? undefined : /listening on (http:\/\/[\d.]+:\d+)/.exec(line)?.[1];
        if (address) {
          replica.url = address;
          replica.listeningAt = Date.now();
          resolve();
        }
      });
      void exited.then(([code]) => reject(new Error(`${name} exited (${code}) before listening:\n${lines.join('\n')}`)));
    });
  };
  try {
    if (options.oneByOne) for (let i = 0; i < count; i++) await start(i);
    else await Promise.all(Array.from({ length: count }, (_, i) => start(i)));
  } catch (err) {
    await replicas.stop();
    throw err;
  }
  return replicas;
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * The runs of periodic job `job` the replicas logged (`job ran`, at debug),
 * each with the tick it claimed: the interval-long window of wall-clock time
 * its claim fell in (src/platform/jobs.ts). A record's time is when the run
 * ended; `ms` is how long it took.
 */
export function jobRuns(replicas: Replicas, job: string, intervalMs: number): { replica: string; tick: number }[] {
  return replicas.list.flatMap((r) =>
    r
      .records()
      .filter((rec) => rec.msg === 'job ran' && rec['job'] === job)
      .map((rec) => ({ replica: r.name, tick: Math.floor((rec.time - Number(rec['ms'])) / intervalMs) })),
  );
}

/** A fresh IPv6 address in the documentation range (a /64 of its own), so per-IP buckets start empty on every run. */
export function freshIp(): string {
  const hex = () => Math.floor(Math.random() * 0x10000).toString(16);
  return `2001:db8:${hex()}:${hex()}::1`;
}
