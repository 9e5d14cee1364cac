import type { RssSample } from './probes.ts';
import { type LatencyStats, type Recorder, stats, type WindowRecord } from './recorder.ts';

/**
 * The two verdicts of a soak, and the figures behind them.
 *
 * Zero errors: no request failed (an unexpected status, a network error or
 * timeout, an answer that fails its check, a cached answer given to a new
 * question), no service logged at level error or fatal, and each service
 * exited 0 on SIGTERM at the end. Warm-up included: every request counts.
 *
 * Memory flat, per service, judged on what a leak leaves behind and the
 * collector cannot take back: at the end of the warm-up and at the end of
 * the run the soak forces a full GC in the process (twice, through its
 * inspector: HeapProfiler.collectGarbage) and reads its /metrics. Its live
 * memory (the used heap of V8's data spaces plus its external memory: what
 * JavaScript objects hold; see test/reliability/process-memory.ts) may grow
 * by at most 4 MiB, and its RSS read right after that GC by at most 8 MiB
 * (native memory: SQLite's page cache, TLS, the allocator's arenas). Read
 * after a full GC, neither holds garbage not yet collected, nor the pages V8
 * reserved for a burst of it, which it keeps until its heap shrinks on its
 * own schedule (minutes apart under a light load). A fixed bound is stricter
 * the longer the run: over the four minutes after the warm-up of a
 * five-minute run at about 35 requests a second, a leak of 1 KB per request
 * exceeds 4 MiB.
 *
 * Reported beside it, not judged: the RSS under load (the median of the
 * 1-second samples of the warm-up's last 20 s and of the run's last 20 s:
 * the median keeps one GC's swing out of either end) and the least-squares
 * slope of every sample after the warm-up, in MiB a minute.
 */
export const FLAT = { maxLiveMiB: 4, maxMiB: 8, edgeSeconds: 20 };

/** A process's memory right after a forced full GC (test/reliability/process-memory.ts), in bytes. */
export interface AfterGc {
  live: number;
  heapUsed: number;
  rss: number;
}

export interface MemoryVerdict {
  /** The first sample, when the traffic started (the population made, nothing else done yet). */
  startMiB: number;
  warmMiB: number;
  endMiB: number;
  growthMiB: number;
  slopeMiBPerMinute: number;
  /**
   * Not judged, to tell what moved: the RSS's parts (RssAnon, RssFile) by the same medians; from the /metrics readings
   * of the windows ending in the same spans, the lowest used heap (a reading holds garbage not yet collected, so the
   * lowest is the nearest to the live heap), and the medians of V8's reserved heap and of the external memory.
   */
  parts: Record<'RssAnon' | 'RssFile' | 'heap used (lowest)' | 'heap total' | 'external', { warm: number; end: number }>;
  /** Read after a forced full GC at the end of the warm-up and at the end of the run, in MiB: what is judged. */
  afterGc: { warm: { liveMiB: number; rssMiB: number }; end: { liveMiB: number; rssMiB: number }; liveGrowthMiB: number; rssGrowthMiB: number };
  flat: boolean;
}

export interface Verdict {
  errors: number;
  errorsByKind: Record<string, number>;
  /** Per service: log lines at level error or fatal, and lines on stderr. */
  serverErrorLines: Record<string, number>;
  exitCodes: Record<string, number | null>;
  zeroErrors: boolean;
  memory: Record<string, MemoryVerdict>;
  memoryFlat: boolean;
  /** Per series, every request after the warm-up. */
  latencyMs: Record<string, LatencyStats>;
  ttfbMs: Record<string, LatencyStats>;
}

const MiB = 2 ** 20;

const median = (values: number[]) => {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]! : Number.NaN;
};

function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return num / den;
}

export function judge(input: {
  recorder: Recorder;
  samples: RssSample[];
  services: string[];
  warmupS: number;
  runS: number;
  serverErrorLines: Record<string, number>;
  exitCodes: Record<string, number | null>;
  /** Per service, its memory after a forced full GC at the end of the warm-up and at the end of the run. */
  afterGc: Record<string, { warm: AfterGc; end: AfterGc }>;
}): Verdict {
  const { recorder, samples, warmupS, runS } = input;
  const errorsByKind: Record<string, number> = {};
  for (const w of recorder.windows) {
    for (const [kind, n] of Object.entries(w.errorsByKind)) errorsByKind[kind] = (errorsByKind[kind] ?? 0) + n;
  }
  const errors = Object.values(errorsByKind).reduce((a, b) => a + b, 0);
  const zeroErrors =
    errors === 0 && Object.values(input.serverErrorLines).every((n) => n === 0) && Object.values(input.exitCodes).every((c) => c === 0);

  const edge = Math.min(FLAT.edgeSeconds, warmupS);
  const memory: Record<string, MemoryVerdict> = {};
  for (const service of input.services) {
    const sampled = (pick: (s: RssSample) => number) => {
      const at = (from: number, to: number) => median(samples.filter((s) => s.atS > from && s.atS <= to).map(pick));
      return { warm: at(warmupS - edge, warmupS), end: at(runS - FLAT.edgeSeconds, runS) };
    };
    const read = (pick: (w: WindowRecord) => number | undefined, of: (values: number[]) => number) => {
      const at = (from: number, to: number) => of(recorder.windows.filter((w) => w.endS > from && w.endS <= to + 1).map((w) => pick(w) ?? Number.NaN));
      return { warm: at(warmupS - edge, warmupS), end: at(runS - FLAT.edgeSeconds, runS) };
    };
    const rss = sampled((s) => s.rssMiB[service]!);
    const after = samples.filter((s) => s.atS > warmupS && s.atS <= runS).map((s): [number, number] => [s.atS / 60, s.rssMiB[service]!]);
    const growthMiB = rss.end - rss.warm;
    const gc = input.afterGc[service];
    const inMiB = (m: AfterGc | undefined) => ({ liveMiB: (m?.live ?? Number.NaN) / MiB, rssMiB: (m?.rss ?? Number.NaN) / MiB });
    const afterGc = { warm: inMiB(gc?.warm), end: inMiB(gc?.end), liveGrowthMiB: 0, rssGrowthMiB: 0 };
    afterGc.liveGrowthMiB = afterGc.end.liveMiB - afterGc.warm.liveMiB;
    afterGc.rssGrowthMiB = afterGc.end.rssMiB - afterGc.warm.rssMiB;
    memory[service] = {
      startMiB: samples[0]?.rssMiB[service] ?? Number.NaN,
      warmMiB: rss.warm,
      endMiB: rss.end,
      growthMiB,
      slopeMiBPerMinute: slope(after),
      parts: {
        RssAnon: sampled((s) => s.anonMiB[service]!),
        RssFile: sampled((s) => s.fileMiB[service]!),
        'heap used (lowest)': read((w) => w.heapUsedMiB[service], (xs) => Math.min(...xs)),
        'heap total': read((w) => w.heapTotalMiB[service], median),
        external: read((w) => w.externalMiB[service], median),
      },
      afterGc,
      // NaN (a reading missing) compares false: not flat.
      flat: afterGc.liveGrowthMiB <= FLAT.maxLiveMiB && afterGc.rssGrowthMiB <= FLAT.maxMiB,
    };
  }

  const after = (map: Map<string, { atS: number; ms: number }[]>) =>
    Object.fromEntries([...map].map(([series, list]) => [series, stats(list.filter((x) => x.atS > warmupS).map((x) => x.ms))]));
  return {
    errors,
    errorsByKind,
    serverErrorLines: input.serverErrorLines,
    exitCodes: input.exitCodes,
    zeroErrors,
    memory,
    memoryFlat: Object.values(memory).every((m) => m.flat),
    latencyMs: after(recorder.all),
    ttfbMs: after(recorder.allTtfb),
  };
}
