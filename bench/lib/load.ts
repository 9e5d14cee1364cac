import autocannon, { type Options, type Result } from 'autocannon';

/** One 2xx response: when it arrived (performance.now()) and its latency in ms. */
export interface Sample {
  at: number;
  ms: number;
}

export interface LoadRun {
  result: Result;
  /** Every 2xx response, when `record` was set. */
  ok: Sample[];
}

/**
 * Runs autocannon in this process. With `record`, every 2xx response is kept
 * with its exact latency (autocannon's own histogram has 1 ms resolution).
 */
export function load(options: Options, record = false): Promise<LoadRun> {
  const ok: Sample[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon({ timeout: 10, ...options }, (err, result) => (err ? reject(err) : resolve({ result, ok })));
    if (record) {
      instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
        if (status >= 200 && status < 300) ok.push({ at: performance.now(), ms });
      });
    }
  });
}

/** Nearest-rank percentile of ascending values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Responses other than 2xx and socket errors, e.g. "429×3, errors 1", or "" when none. */
export function problems(result: Result): string {
  const parts = Object.entries(result.statusCodeStats)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, { count }]) => `${code}×${count}`);
  if (result.errors) parts.push(`errors ${result.errors}`);
  if (result.timeouts) parts.push(`timeouts ${result.timeouts}`);
  if (result.mismatches) parts.push(`body mismatches ${result.mismatches}`);
  return parts.join(', ');
}
