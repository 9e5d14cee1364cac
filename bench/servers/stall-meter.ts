import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

/** What held up a server's event loop over a window: its lateness, and the garbage collector's pauses. */
export interface StallReading {
  /** Event-loop lateness in ms (timer delay beyond its interval): p99 and max of the window. */
  loopP99: number;
  loopMax: number;
  /** Garbage collections (every kind: all stop the main thread) of the window, their total and longest pause in ms. */
  gcCount: number;
  gcMs: number;
  gcMaxMs: number;
}

const RESOLUTION_MS = 2; // the histogram records whole timer intervals: lateness = value - resolution

/**
 * Inside a benchmark server: measures its own event loop's lateness and the
 * GC's pauses from now on; each takeReading() returns the window since the
 * previous one (or since the start) and opens the next. A 2 ms timer and a
 * GC observer are all it adds to the server.
 */
export function stallMeter(): { takeReading(): StallReading } {
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  let gc = { count: 0, ms: 0, max: 0 };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count++;
      gc.ms += entry.duration;
      gc.max = Math.max(gc.max, entry.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  return {
    takeReading() {
      const reading: StallReading = {
        loopP99: Math.max(0, delay.percentile(99) / 1e6 - RESOLUTION_MS),
        loopMax: Math.max(0, delay.max / 1e6 - RESOLUTION_MS),
        gcCount: gc.count,
        gcMs: gc.ms,
        gcMaxMs: gc.max,
      };
      delay.reset();
      gc = { count: 0, ms: 0, max: 0 };
      return reading;
    },
  };
}
