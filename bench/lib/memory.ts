import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Resident memory of a process, from /proc (Linux; NaN elsewhere or once it has exited). */

/** VmRSS of /proc/PID/status, in MiB. */
export function rssMiB(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Samples rssMiB every `everyMs` until the function returned is called; it returns the highest sample. */
export function rssPeak(pid: number, everyMs = 250): () => number {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid));
  }, everyMs);
  return () => {
    clearInterval(timer);
    return Math.max(peak, rssMiB(pid));
  };
}

/**
 * RSS of an idle Node process of this binary, as plain JavaScript and as
 * TypeScript (type stripping loads a transpiler, which costs memory): the
 * floor under every child's figures. Each runs half a second before it is read.
 */
export async function idleNodeRss(): Promise<{ js: number; ts: number }> {
  const measure = (inputType: string) =>
    new Promise<number>((resolve, reject) => {
      const script = `const a${inputType.endsWith('typescript') ? ': number' : ''} = 0; setTimeout(() => process.stdout.write(String(a + process.memoryUsage().rss)), 500);`;
      execFile(process.execPath, [`--input-type=${inputType}`, '-e', script], (err, stdout) => (err ? reject(err) : resolve(Number(stdout) / 2 ** 20)));
    });
  return { js: await measure('module'), ts: await measure('module-typescript') };
}
