import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { cpuWindow, processCpuSeconds } from '../lib/cpu.ts';
import type { Recorder, WindowRecord } from './recorder.ts';

export type WindowFigures = Pick<WindowRecord, 'rssMiB' | 'heapUsedMiB' | 'heapTotalMiB' | 'externalMiB' | 'cpuCores' | 'driverLagP99Ms'>;

/**
 * The processes' figures: resident memory every second (the flatness
 * judgement fits on these), and per window the used heap from each
 * service's /metrics (prom-client's process metrics, as Prometheus would
 * scrape them), the cores each process used, and the soak process's own
 * event-loop lateness.
 */
export interface Watched {
  name: string;
  pid: number;
  /** Where its Prometheus metrics are (the services), if anywhere. */
  metricsUrl?: string;
}

export interface RssSample {
  atS: number;
  /** VmRSS: what the flatness verdict is about. */
  rssMiB: Record<string, number>;
  /** Its two main parts: RssAnon (the process's own memory: heap, buffers, native allocations) and RssFile (mapped files' pages). */
  anonMiB: Record<string, number>;
  fileMiB: Record<string, number>;
}

/** The VmRSS, RssAnon and RssFile lines of /proc/PID/status, in MiB (NaN off Linux or once the process is gone). */
function residentMiB(pid: number): { rss: number; anon: number; file: number } {
  let status = '';
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    // gone
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** prom-client's process metrics of a service (the names carry its prefix: auth_nodejs_heap_size_used_bytes). */
const METRICS = {
  heapUsedMiB: /^\w*nodejs_heap_size_used_bytes\s+(\S+)$/m,
  heapTotalMiB: /^\w*nodejs_heap_size_total_bytes\s+(\S+)$/m,
  externalMiB: /^\w*nodejs_external_memory_bytes\s+(\S+)$/m,
} as const;
const MiB = 2 ** 20;

export class Probes {
  readonly samples: RssSample[] = [];
  readonly #watched: Watched[];
  readonly #recorder: Recorder;
  readonly #lag = monitorEventLoopDelay({ resolution: 10 });
  #timer: NodeJS.Timeout | undefined;
  #cpu: { at: number; seconds: Record<string, number>; machine: ReturnType<typeof cpuWindow> } | undefined;

  constructor(watched: Watched[], recorder: Recorder) {
    this.#watched = watched;
    this.#recorder = recorder;
  }

  start(): void {
    this.#lag.enable();
    this.#cpu = this.#cpuMark();
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), 1000);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#lag.disable();
  }

  /** The figures of the window ending now; opens the next CPU window. */
  async windowFigures(): Promise<WindowFigures> {
    const heap: Record<keyof typeof METRICS, Record<string, number>> = { heapUsedMiB: {}, heapTotalMiB: {}, externalMiB: {} };
    await Promise.all(
      this.#watched
        .filter((w) => w.metricsUrl)
        .map(async (w) => {
          const text = await fetch(w.metricsUrl!, { signal: AbortSignal.timeout(5_000) })
            .then((res) => res.text())
            .catch(() => '');
          for (const [key, pattern] of Object.entries(METRICS) as [keyof typeof METRICS, RegExp][]) {
            heap[key][w.name] = Number(pattern.exec(text)?.[1] ?? Number.NaN) / MiB;
          }
        }),
    );
    const cpuCores = this.#cpuShares();
    const driverLagP99Ms = Math.max(0, this.#lag.percentile(99) / 1e6 - 10);
    this.#lag.reset();
    return { rssMiB: this.#resident().rssMiB, ...heap, cpuCores, driverLagP99Ms };
  }

  #resident(): Omit<RssSample, 'atS'> {
    const out: Omit<RssSample, 'atS'> = { rssMiB: {}, anonMiB: {}, fileMiB: {} };
    for (const w of this.#watched) {
      const m = residentMiB(w.pid);
      out.rssMiB[w.name] = m.rss;
      out.anonMiB[w.name] = m.anon;
      out.fileMiB[w.name] = m.file;
    }
    out.rssMiB['soak'] = process.memoryUsage().rss / MiB;
    return out;
  }

  #sample(): void {
    this.samples.push({ atS: this.#recorder.seconds(), ...this.#resident() });
  }

  #cpuMark() {
    // The machine's window is opened on the first watched process; the others are read beside it.
    return {
      at: performance.now(),
      seconds: Object.fromEntries(this.#watched.map((w) => [w.name, processCpuSeconds(w.pid)])),
      machine: cpuWindow(this.#watched[0]!.pid),
    };
  }

  #cpuShares(): Record<string, number> {
    const mark = this.#cpu!;
    const machine = mark.machine();
    const seconds = (performance.now() - mark.at) / 1000;
    const shares: Record<string, number> = {};
    for (const w of this.#watched) shares[w.name] = (processCpuSeconds(w.pid) - mark.seconds[w.name]!) / seconds;
    // cpuWindow's "rest" is everything but its server (the first watched) and this process: take the other watched out.
    const others = this.#watched.slice(1).reduce((sum, w) => sum + shares[w.name]!, 0);
    shares['soak'] = machine.bench;
    shares['rest of the machine'] = Math.max(0, machine.rest - others);
    this.#cpu = this.#cpuMark();
    return shares;
  }
}
