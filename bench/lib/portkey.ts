import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/helpers/auth.ts';
import { log } from './format.ts';

/**
 * Portkey's open-source gateway (npm @portkey-ai/gateway) for the gateway
 * benchmark: installed on first use into bench/.portkey (git-ignored, never
 * committed; BENCH_PORTKEY_VERSION picks another version), run with this
 * process's Node as a child on a free port.
 *
 * Addressing (its docs' "Headers" page and the request validator of its
 * build, read for facts): POST
 * /v1/chat/completions with `x-portkey-provider: openai` and
 * `x-portkey-custom-host: <base URL with /v1>`; the Authorization header goes
 * upstream as is. Loopback custom hosts are trusted by default
 * (TRUSTED_CUSTOM_HOSTS unset).
 */
const VERSION = process.env['BENCH_PORTKEY_VERSION'] ?? '1.15.2';
const DIR = fileURLToPath(new URL('../.portkey/', import.meta.url));
const PACKAGE_DIR = `${DIR}node_modules/@portkey-ai/gateway/`;

export interface PortkeyProcess {
  url: string;
  pid: number;
  version: string;
  /** Lines Portkey printed with "Error" in them (it logs a stack per failed request), and the first of them. */
  errors(): { count: number; first: string | undefined };
  stop(): Promise<void>;
}

function installedVersion(): string | undefined {
  const manifest = `${PACKAGE_DIR}package.json`;
  return existsSync(manifest) ? (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version : undefined;
}

/** Installs the pinned version unless it is there already; returns the path of its server script. */
export function ensurePortkey(): { entry: string; version: string } {
  if (installedVersion() !== VERSION) {
    log(`installing @portkey-ai/gateway@${VERSION} into bench/.portkey (first use)`);
    execFileSync('npm', ['install', '--prefix', DIR, `@portkey-ai/gateway@${VERSION}`, '--no-audit', '--no-fund', '--loglevel=error'], { stdio: 'inherit' });
  }
  return { entry: `${PACKAGE_DIR}build/start-server.js`, version: installedVersion()! };
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function startPortkey(): Promise<PortkeyProcess> {
  const { entry, version } = ensurePortkey();
  const port = await freePort();
  const child = spawn(process.execPath, [entry, `--port=${port}`, '--headless'], { env: { PATH: process.env['PATH'] ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => live.delete(child));
  let count = 0;
  let first: string | undefined;
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (!/error/i.test(line)) return;
      count++;
      first ??= line.trim();
    });
  }
  const url = `http://127.0.0.1:${port}`;
  const until = performance.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`portkey exited with code ${child.exitCode} before it was ready`);
    const ok = await fetch(`${url}/`).then((r) => r.ok, () => false);
    if (ok) break;
    if (performance.now() > until) {
      child.kill('SIGKILL');
      throw new Error('portkey: not ready after 30 s');
    }
    await sleep(100);
  }
  return {
    url,
    pid: child.pid!,
    version,
    errors: () => ({ count, first }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      if (await Promise.race([exited.then(() => false), sleep(5_000).then(() => true)])) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}
