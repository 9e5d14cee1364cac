import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A service running as its own process, as `npm run start:auth` or `start:gateway` runs it. */
export interface ServiceProcess {
  child: ChildProcess;
  /** Everything it wrote, for failure messages. */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
  /** SIGKILL, and waits until the process is gone. */
  kill9(): Promise<void>;
  /** SIGTERM (a graceful stop); resolves with the exit code. */
  stop(): Promise<number | string>;
}

/**
 * Spawns `script` (src/auth/main.ts, src/gateway/main.ts) with only `env`
 * (and PATH) and waits for its "listening" log line. The process is killed
 * when the test ends, if it still runs.
 */
export async function startServiceProcess(t: TestContext, script: string, env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [script], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (d) => {
    output += d;
  });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      if (line.includes('listening')) resolve();
    });
    void exited.then((code) => reject(new Error(`${script} exited (${code}) before listening:\n${output}`)));
  });
  return {
    child,
    output: () => output,
    exited,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
