import type { CpuShares } from './cpu.ts';

/** Small helpers the benchmarks share: number formatting, the progress log, one-off HTTP calls. */

export const fmt = (n: number, digits = 0) => n.toFixed(digits);
export const pct = (x: number) => `${fmt(100 * x)} %`;
export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** The median of the figures that are numbers (NaN: none is), the upper one of an even count: one run's figure. */
export const median = (xs: number[]) => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : Number.NaN;
};
/** "lowest to highest" of run-by-run figures. */
export const spread = (xs: number[], digits = 2) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${fmt(s[0]!, digits)} to ${fmt(s[s.length - 1]!, digits)}`;
};
export const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

export const cpuText = (c: CpuShares, server = 'server') =>
  `${server} ${pct(c.server)}, bench process ${pct(c.bench)}, rest of the machine ${pct(c.rest)}, steal ${pct(c.steal)}`;

/** One request outside the load, with a 10 s limit. */
export async function call(url: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}
