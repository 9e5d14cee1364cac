import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { processCpuSeconds } from './cpu.ts';

/** A benchmark server running in its own process. */
export interface ChildServer<Info> {
  name: string;
  pid: number;
  /** What the server printed when it was ready. */
  info: Info;
  /** CPU time (user + system, all threads) the process has used so far, in seconds; NaN off Linux. */
  cpuSeconds(): number;
  /** Asks the server a question over the IPC channel (see bench/servers/auth-server.ts); resolves with its answer. */
  ask<Answer>(question: string): Promise<Answer>;
  /** SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
// Whatever happens to this process (error, time limit, Ctrl-C), no server outlives it.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/**
 * Starts `script` with Node (this process's binary) and only the environment
 * given (plus PATH), so nothing from the caller's shell (AUTH_BCRYPT_COST,
 * SMTP_HOST...) leaks into the measurement. Resolves with the JSON line the
 * server prints once listening. BENCH_CPU_PROF=<dir> runs it under --cpu-prof.
 */
export async function startServer<Info>(name: string, script: URL, env: Record<string, string>): Promise<ChildServer<Info>> {
  const profDir = process.env['BENCH_CPU_PROF'];
  const execArgv = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  const child = spawn(process.execPath, [...execArgv, fileURLToPath(script)], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['pipe', 'pipe', 'inherit', 'ipc'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child);
      resolve();
    });
  });

  const lines = createInterface({ input: child.stdout! });
  const first = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not ready after 30 s`)), 30_000);
    lines.once('line', (line) => {
      clearTimeout(timer);
      resolve(line);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${child.exitCode} before it was ready`));
    });
  });
  let info: Info;
  try {
    info = JSON.parse(await first) as Info;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  // Later output (warnings, errors) goes to stderr, prefixed, away from the results.
  lines.on('line', (line) => process.stderr.write(`[${name}] ${line}\n`));

  return {
    name,
    pid: child.pid!,
    info,
    cpuSeconds: () => processCpuSeconds(child.pid!),
    ask<Answer>(question: string): Promise<Answer> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name}: no answer to ${question}`)), 10_000);
        child.once('message', (answer) => {
          clearTimeout(timer);
          resolve(answer as Answer);
        });
        child.send(question);
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killed = await Promise.race([exited.then(() => false), sleep(5_000).then(() => true)]);
      if (killed) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}
