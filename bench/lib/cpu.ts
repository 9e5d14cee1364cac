import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * CPU accounting from /proc (Linux; elsewhere every figure is NaN). The
 * machine is shared, so each measurement window says who used the cores:
 * the server under test, this bench process (autocannon), and the rest.
 */
const TICK = 100; // USER_HZ: /proc counts CPU time in 1/100 s

/** utime + stime of a process, all threads, in seconds (fields 14 and 15 of /proc/PID/stat). */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICK;
  } catch {
    return Number.NaN;
  }
}

/**
 * utime + stime of a process's main thread alone (its first thread, whose id is the pid: the event loop of a Node
 * process), in seconds; NaN off Linux.
 */
export function mainThreadCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICK;
  } catch {
    return Number.NaN;
  }
}

/** Busy and stolen CPU of the whole machine, in seconds (first line of /proc/stat). */
function machineCpuSeconds(): { busy: number; steal: number } {
  try {
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { busy: (user! + nice! + system! + irq! + softirq!) / TICK, steal: steal! / TICK };
  } catch {
    return { busy: Number.NaN, steal: Number.NaN };
  }
}

const benchCpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/** Average cores in use over a window: 1 = one core all the time. */
export interface CpuShares {
  server: number;
  bench: number;
  /** Every other process, and kernel time not charged to a process (loopback networking's softirqs among it). */
  rest: number;
  /** Time the hypervisor gave to other guests. */
  steal: number;
}

/** Starts a window; the function returned ends it and tells who used the CPU during it. */
export function cpuWindow(serverPid: number): () => CpuShares {
  const t0 = performance.now();
  const server0 = processCpuSeconds(serverPid);
  const bench0 = benchCpuSeconds();
  const machine0 = machineCpuSeconds();
  return () => {
    const seconds = (performance.now() - t0) / 1000;
    const server = (processCpuSeconds(serverPid) - server0) / seconds;
    const bench = (benchCpuSeconds() - bench0) / seconds;
    const machine = machineCpuSeconds();
    const busy = (machine.busy - machine0.busy) / seconds;
    return { server, bench, rest: Math.max(0, busy - server - bench), steal: (machine.steal - machine0.steal) / seconds };
  };
}

/** Waits (at most `maxMs`) until the process uses under 5 % of a core over a quarter of a second. */
export async function waitUntilIdle(pid: number, maxMs = 5_000): Promise<void> {
  const until = performance.now() + maxMs;
  while (performance.now() < until) {
    const c0 = processCpuSeconds(pid);
    await sleep(250);
    if (!((processCpuSeconds(pid) - c0) / 0.25 >= 0.05)) return;
  }
}

/** Bytes a process caused to be sent to storage so far (write_bytes of /proc/PID/io: page-cache pages it dirtied); NaN off Linux. */
export function processWriteBytes(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/io`, 'utf8').split('\n').find((l) => l.startsWith('write_bytes:'));
    return line ? Number(line.split(':')[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** How the scheduler treated a process's main thread so far; every figure NaN off Linux (or without schedstats). */
export interface Scheduling {
  /** Seconds it spent runnable but waiting for a core (the second field of /proc/PID/task/PID/schedstat). */
  waitSeconds: number;
  /** Times it gave up its core: it blocked (in epoll_wait, a futex). */
  voluntary: number;
  /** Times it was preempted: another thread, most often one its own write had just woken, took its core. */
  involuntary: number;
}

export function mainThreadScheduling(pid: number): Scheduling {
  try {
    const wait = Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
    const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1]);
    return { waitSeconds: wait, voluntary: field('voluntary_ctxt_switches'), involuntary: field('nonvoluntary_ctxt_switches') };
  } catch {
    return { waitSeconds: Number.NaN, voluntary: Number.NaN, involuntary: Number.NaN };
  }
}
