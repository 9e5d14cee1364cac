import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AbOptions, type AbSummary, FLOOR_NAME, runAb, summarize } from '../lib/ab-run.ts';
import { fmt, log } from '../lib/format.ts';
import type { Row } from '../lib/report.ts';

/**
 * The gateway against an earlier commit of itself (BEFORE, or BENCH_AB_BASE),
 * so that a change that must not cost the hot path shows what it costs:
 * RUNS interleaved A/B runs (bench/lib/ab-run.ts), each with benchmark 5's
 * throughput load (50 connections, a fake answering at once: CPU per call)
 * and its latency load (10 connections, a fake answering after 20 ms:
 * X-Gateway-Overhead-Ms), the Node floor beside both gateways. The earlier
 * commit runs from a temporary git worktree sharing this checkout's
 * node_modules. Judged on the median of the runs' ratios, against their
 * spread (docs/BENCHMARKS.md).
 */
export const BEFORE = { rev: '16e5450', what: 'the last commit before the hardening of issue 31' };

const RUNS = 3;
const THROUGHPUT: AbOptions = { latency: false, rounds: 4, sliceS: 5, warmupS: 4, connections: 50, floor: true, verbose: false };
const LATENCY: AbOptions = { latency: true, rounds: 2, sliceS: 5, warmupS: 4, connections: 10, floor: true, verbose: false };
/** After/before CPU per call on the main thread above this is a cost, whatever the spread. */
const CPU_BOUND = 1.05;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Run {
  throughput: Record<string, AbSummary>;
  latency: Record<string, AbSummary>;
}

export async function gatewayBeforeAfter(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  const rev = process.env['BENCH_AB_BASE'] ?? BEFORE.rev;
  const what = process.env['BENCH_AB_BASE'] ? 'BENCH_AB_BASE' : BEFORE.what;
  let checkout: string;
  try {
    checkout = mkdtempSync(join(tmpdir(), 'gateway-before-'));
    execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', '--force', checkout, rev], { stdio: 'ignore' });
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
  } catch (err) {
    const why = `no checkout of ${rev} (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`;
    log(`before/after: ${why}`);
    return { rows: [notRun(why)], details: [], raw: {} };
  }
  const commit = execFileSync('git', ['-C', checkout, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const head = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const specs = [
    { name: 'before', checkout, env: {} },
    { name: 'after', checkout: undefined, env: {} },
  ];
  const runs: Run[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      log(`before/after: run ${i + 1} of ${RUNS} (${commit} against ${head})`);
      const byName = (tallies: Awaited<ReturnType<typeof runAb>>) => Object.fromEntries(tallies.map((t) => [t.name, summarize(t)]));
      runs.push({ throughput: byName(await runAb(specs, THROUGHPUT)), latency: byName(await runAb(specs, LATENCY)) });
    }
  } finally {
    execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', checkout], { stdio: 'ignore' });
    rmSync(checkout, { recursive: true, force: true });
  }

  const ratios = (pick: (r: Run) => number) => runs.map(pick).sort((a, b) => a - b);
  const median = (xs: number[]) => xs[Math.floor(xs.length / 2)]!;
  const spread = (xs: number[], digits = 3) => `${fmt(xs[0]!, digits)} to ${fmt(xs[xs.length - 1]!, digits)}`;
  const t = (r: Run, name: string) => r.throughput[name]!;
  const l = (r: Run, name: string) => r.latency[name]!;
  const mainRatio = ratios((r) => t(r, 'after').mainUs / t(r, 'before').mainUs);
  const cpuRatio = ratios((r) => t(r, 'after').cpuUs / t(r, 'before').cpuUs);
  const rateRatio = ratios((r) => t(r, 'after').rate / t(r, 'before').rate);
  const med = (pick: (r: Run) => number) => median(ratios(pick));
  const vsFloor = (name: string) => med((r) => t(r, name).mainUs / t(r, FLOOR_NAME).mainUs);

  const rows: Row[] = [
    {
      id: '9',
      benchmark: `gateway CPU per call, after against before (${RUNS} interleaved A/B runs, 50 connections, 0 ms fake)`,
      measured: `after ${fmt(med((r) => t(r, 'after').mainUs))} µs main thread, ${fmt(med((r) => t(r, 'after').cpuUs))} µs all threads (${fmt(vsFloor('after'), 2)} × the floor's)`,
      baseline: `before ${fmt(med((r) => t(r, 'before').mainUs))} µs, ${fmt(med((r) => t(r, 'before').cpuUs))} µs (${fmt(vsFloor('before'), 2)} × the floor's)`,
      result: `main thread ${fmt(median(mainRatio), 3)} × (runs ${spread(mainRatio)}); all threads ${fmt(median(cpuRatio), 3)} × (runs ${spread(cpuRatio)})`,
      target: `main thread <= ${CPU_BOUND} × before`,
      pass: median(mainRatio) <= CPU_BOUND,
    },
    {
      id: '9',
      benchmark: 'gateway throughput, after against before (same runs)',
      measured: `after ${fmt(med((r) => t(r, 'after').rate))} calls/s (${fmt(med((r) => t(r, 'after').rate / t(r, FLOOR_NAME).rate), 3)} of the floor)`,
      baseline: `before ${fmt(med((r) => t(r, 'before').rate))} calls/s (${fmt(med((r) => t(r, 'before').rate / t(r, FLOOR_NAME).rate), 3)} of the floor)`,
      result: `${fmt(median(rateRatio), 3)} × (runs ${spread(rateRatio)})`,
      target: 'none (reported)',
      pass: true,
      verdict: 'info',
    },
    {
      id: '9',
      benchmark: 'gateway X-Gateway-Overhead-Ms, after against before (10 connections, 20 ms fake)',
      measured: `after p50 ${fmt(med((r) => l(r, 'after').overheadP50), 2)} ms, p99 ${fmt(med((r) => l(r, 'after').overheadP99), 2)} ms`,
      baseline: `before p50 ${fmt(med((r) => l(r, 'before').overheadP50), 2)} ms, p99 ${fmt(med((r) => l(r, 'before').overheadP99), 2)} ms`,
      result: `p50 ${signed(med((r) => l(r, 'after').overheadP50 - l(r, 'before').overheadP50))} ms, p99 ${signed(med((r) => l(r, 'after').overheadP99 - l(r, 'before').overheadP99))} ms`,
      target: 'none (reported)',
      pass: true,
      verdict: 'info',
    },
  ];
  const perRun = runs.map((r, i) => {
    const tp = (name: string) => `${name} ${fmt(t(r, name).rate)} calls/s, ${fmt(t(r, name).mainUs)}/${fmt(t(r, name).cpuUs)} µs`;
    const lat = (name: string) => `${name} p50 ${fmt(l(r, name).p50, 2)}, p99 ${fmt(l(r, name).p99, 2)} ms, overhead p50 ${fmt(l(r, name).overheadP50, 2)}, p99 ${fmt(l(r, name).overheadP99, 2)} ms`;
    return `Before/after run ${i + 1}: throughput load (CPU per call main/all threads): ${[FLOOR_NAME, 'before', 'after'].map(tp).join('; ')}. Latency load: ${['before', 'after'].map(lat).join('; ')}; ${FLOOR_NAME} p50 ${fmt(l(r, FLOOR_NAME).p50, 2)}, p99 ${fmt(l(r, FLOOR_NAME).p99, 2)} ms.`;
  });
  const details = [
    `Before/after (bench/benchmarks/gateway-before-after.ts): "before" is ${commit} (${what}), run from a temporary git worktree with this checkout's node_modules; "after" is ${head}; both are bench/servers/gateway-server.ts of their commit (every stage on, as in benchmark 5). ${RUNS} runs, each an interleaved A/B at the throughput load (4 s warm-up each, 4 rounds of 5 s slices) then at the latency load (2 rounds); the rows give each figure's median over the runs.`,
    ...perRun,
  ];
  return { rows, details, raw: { gatewayBeforeAfter: { before: commit, after: head, runs } } };
}

const signed = (x: number) => `${x >= 0 ? '+' : ''}${fmt(x, 2)}`;

function notRun(why: string): Row {
  return { id: '9', benchmark: 'gateway CPU per call, after against before', measured: 'not run', baseline: why, result: 'n/a', target: 'none', pass: false, verdict: 'NOT RUN' };
}
