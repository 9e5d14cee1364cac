import { percentile } from '../lib/load.ts';
import type { WindowFigures } from './probes.ts';

/**
 * What the soak records: every request's latency under its series, every
 * failure under "<traffic kind>: <failure kind>", each in the window its
 * answer (or failure) arrived in, and per window the memory and CPU of the
 * processes that `closeWindow` is given.
 */
export interface LatencyStats {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export interface WindowRecord {
  /** Seconds since the start of the traffic. */
  startS: number;
  endS: number;
  requests: number;
  errors: number;
  latencyMs: Record<string, LatencyStats>;
  /** Streams: time to the first event. */
  ttfbMs: Record<string, LatencyStats>;
  errorsByKind: Record<string, number>;
  /** X-Gateway-Cache of the gateway's answers. */
  cache: Record<string, number>;
  /** Resident memory at the window's end (VmRSS), per process. */
  rssMiB: Record<string, number>;
  /** V8's used heap at the window's end, from each service's /metrics (nodejs_heap_size_used_bytes): garbage not yet collected included. */
  heapUsedMiB: Record<string, number>;
  /** V8's heap as reserved from the system (nodejs_heap_size_total_bytes): what the used heap may grow into before a GC. */
  heapTotalMiB: Record<string, number>;
  /** Memory of C++ objects bound to JavaScript ones: Buffers, ArrayBuffers (nodejs_external_memory_bytes). */
  externalMiB: Record<string, number>;
  /** Cores used over the window, per process, and by the rest of the machine (other agents' work among it). */
  cpuCores: Record<string, number>;
  /** The soak process's own event-loop lateness (p99, ms): when high, its latencies are inflated by itself. */
  driverLagP99Ms: number;
}

export interface Failed {
  atS: number;
  kind: string;
  detail: string;
}

interface Open {
  latencies: Map<string, number[]>;
  ttfb: Map<string, number[]>;
  errorsByKind: Record<string, number>;
  cache: Record<string, number>;
}

const open = (): Open => ({ latencies: new Map(), ttfb: new Map(), errorsByKind: {}, cache: {} });
const push = (map: Map<string, number[]>, key: string, value: number) => {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
};

export function stats(values: number[]): LatencyStats {
  const sorted = values.toSorted((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN };
}

export class Recorder {
  readonly windows: WindowRecord[] = [];
  /** Every latency of the run, with when it was recorded (seconds since the start). */
  readonly all = new Map<string, { atS: number; ms: number }[]>();
  readonly allTtfb = new Map<string, { atS: number; ms: number }[]>();
  /** The first failures of each kind (at most 5 each), for the report. */
  readonly examples: Failed[] = [];
  readonly #start: number;
  #current = open();
  #windowStart = 0;

  constructor(start: number) {
    this.#start = start;
  }

  seconds(at = performance.now()): number {
    return (at - this.#start) / 1000;
  }

  ok(series: string, ms: number, ttfbMs?: number, cache?: string): void {
    const atS = this.seconds();
    push(this.#current.latencies, series, ms);
    const all = this.all.get(series) ?? [];
    all.push({ atS, ms });
    this.all.set(series, all);
    if (ttfbMs !== undefined) {
      push(this.#current.ttfb, series, ttfbMs);
      const list = this.allTtfb.get(series) ?? [];
      list.push({ atS, ms: ttfbMs });
      this.allTtfb.set(series, list);
    }
    if (cache) this.#current.cache[cache] = (this.#current.cache[cache] ?? 0) + 1;
  }

  fail(kind: string, detail: string): void {
    this.#current.errorsByKind[kind] = (this.#current.errorsByKind[kind] ?? 0) + 1;
    if (this.examples.filter((e) => e.kind === kind).length < 5) this.examples.push({ atS: this.seconds(), kind, detail: detail.slice(0, 400) });
  }

  /** Ends the current window with the given process figures and opens the next. */
  closeWindow(figures: WindowFigures): WindowRecord {
    const { latencies, ttfb, errorsByKind, cache } = this.#current;
    this.#current = open();
    const endS = this.seconds();
    const errors = Object.values(errorsByKind).reduce((a, b) => a + b, 0);
    const latencyMs = Object.fromEntries([...latencies].map(([series, values]) => [series, stats(values)]));
    const record: WindowRecord = {
      startS: this.#windowStart,
      endS,
      requests: Object.values(latencyMs).reduce((a, s) => a + s.n, 0) + errors,
      errors,
      latencyMs,
      ttfbMs: Object.fromEntries([...ttfb].map(([series, values]) => [series, stats(values)])),
      errorsByKind,
      cache,
      ...figures,
    };
    this.#windowStart = endS;
    this.windows.push(record);
    return record;
  }
}
