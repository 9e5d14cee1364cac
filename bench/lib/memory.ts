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
