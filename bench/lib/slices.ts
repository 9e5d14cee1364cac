import type { Options } from 'autocannon';
import type { ChildServer } from './children.ts';
import { type CpuShares, cpuWindow } from './cpu.ts';
import { load, problems } from './load.ts';

/** What the slices of one side (bare, or the route under test) added up to. */
export interface SliceTotals {
  /** 2xx responses. */
  ok: number;
  seconds: number;
  /** Time-weighted mean over the slices, in cores. */
  cpu: CpuShares;
  /** Responses not 2xx, socket errors, timeouts and body mismatches, over the slices. */
  notOk: number;
  /** problems() of each slice that had any. */
  trouble: string[];
  /** problems() of the warm-up, or "". */
  warmupTrouble: string;
  /** Each slice's start and end on the monotonic clock, in µs (the clock of V8's CPU profiles): to cut a BENCH_CPU_PROF profile. */
  windows: [number, number][];
  /** The exact latency of every 2xx response of the slices, in ms, when the side asked for it (`record`). */
  latencies: number[];
}

export interface Comparison {
  bare: SliceTotals;
  route: SliceTotals;
  bareRate: number;
  rate: number;
  ratio: number;
}

export interface Side {
  server: ChildServer<unknown>;
  /**
   * The autocannon options of a run, asked for before each one (warm-up
   * included, outside the measured time): a route whose requests use up
   * state, such as rotating refresh tokens, gets fresh state for every run.
   */
  options: () => Options | Promise<Options>;
  /** Keep every 2xx response's exact latency (autocannon's own histogram has 1 ms resolution). */
  record?: boolean;
  /** Called right before and right after each measured slice: to read counters the server keeps (writes, bytes). */
  around?: { start(): Promise<void> | void; end(): Promise<void> | void };
}

const zero = (): CpuShares => ({ server: 0, bench: 0, rest: 0, steal: 0 });
const KEYS = ['server', 'bench', 'rest', 'steal'] as const;
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * A route's throughput against the bare Fastify route: a warm-up of each,
 * then slices in the order bare, route, route, bare, so that drift in the
 * machine's speed weighs on both alike. Both sides run on `connections`.
 */
export async function versusBare(
  bare: Side,
  route: Side,
  timing: { connections: number; warmupS: number; sliceS: number },
): Promise<Comparison> {
  const sides = { bare, route };
  const totals = {
    bare: { ok: 0, notOk: 0, seconds: 0, cpu: zero(), trouble: [] as string[], warmupTrouble: '', windows: [] as [number, number][], latencies: [] as number[] },
    route: { ok: 0, notOk: 0, seconds: 0, cpu: zero(), trouble: [] as string[], warmupTrouble: '', windows: [] as [number, number][], latencies: [] as number[] },
  };
  for (const name of ['bare', 'route'] as const) {
    const { result } = await load({ ...(await sides[name].options()), connections: timing.connections, duration: timing.warmupS });
    totals[name].warmupTrouble = problems(result);
  }
  for (const name of ['bare', 'route', 'route', 'bare'] as const) {
    const side = sides[name];
    const options = await side.options();
    await side.around?.start();
    const start = monotonicUs();
    const window = cpuWindow(side.server.pid);
    const { result, ok } = await load({ ...options, connections: timing.connections, duration: timing.sliceS }, side.record);
    const cpu = window();
    await side.around?.end();
    const total = totals[name];
    for (const sample of ok) total.latencies.push(sample.ms);
    total.windows.push([start, monotonicUs()]);
    total.ok += result['2xx'];
    total.notOk += result.non2xx + result.errors + result.timeouts + result.mismatches;
    total.seconds += result.duration;
    for (const k of KEYS) total.cpu[k] += cpu[k] * result.duration;
    const trouble = problems(result);
    if (trouble) total.trouble.push(trouble);
  }
  for (const total of Object.values(totals)) {
    for (const k of KEYS) total.cpu[k] /= total.seconds;
  }
  const bareRate = totals.bare.ok / totals.bare.seconds;
  const rate = totals.route.ok / totals.route.seconds;
  return { bare: totals.bare, route: totals.route, bareRate, rate, ratio: rate / bareRate };
}

/** Server CPU per 2xx response, in µs. */
export const cpuPerRequest = (t: SliceTotals) => (t.cpu.server * t.seconds * 1e6) / t.ok;
