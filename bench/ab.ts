import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { FLOOR_NAME, runAb, summarize } from './lib/ab-run.ts';
import { fmt } from './lib/format.ts';
import { percentile } from './lib/load.ts';

/**
 * An interleaved A/B of the gateway on benchmark 5's load: several gateway
 * processes, each from a checkout of this repository (a git worktree of
 * another commit, with node_modules) and with environment of its own, side
 * by side with the Node floor, on one fake provider. Each target serves
 * WARMUP s first, then slices take turns (in order, then reversed, ROUNDS
 * times), each target idle before its own, so that the shared machine's
 * noisy stretches weigh on every target alike; a change is only worth what
 * it shows against that noise (repeat the run).
 *
 *   node bench/ab.ts [--latency] [--rounds 4] [--slice 5] [--warmup 8] [--connections N] [--no-floor]
 *                    [--env NAME:KEY=VALUE ...] NAME=CHECKOUT ...
 *
 * e.g. `git worktree add /tmp/base HEAD~1 && ln -s "$PWD/node_modules" /tmp/base/`, then
 * `node bench/ab.ts base=/tmp/base new=. --env new:GATEWAY_USAGE_FLUSH_MS=100`.
 * Each NAME=CHECKOUT runs CHECKOUT's bench/servers/gateway-server.ts (every
 * stage on, as in benchmark 5; BENCH_GATEWAY_SETTINGS, given with --env,
 * replaces its settings). Without --latency: 50 connections on a fake
 * answering at once (benchmark 5's throughput load); with it: 10
 * connections on one answering after 20 ms (its latency load). Per target:
 * calls per second, the gateway's own X-Gateway-Overhead-Ms (p50, p99), CPU per call on the main thread (the event loop) and in
 * all threads, exact p50 and p99 (every response's latency kept), and how
 * the scheduler treated the main thread per call: time runnable but waiting
 * for a core, times it blocked, times it was preempted. Measured with it on
 * these two-core machines (28 November 2026): at the latency load a call
 * costs the gateway three to four times its CPU at the throughput load, and
 * its main thread is preempted 0.9 times a call (the floor's 0.5), most
 * often by the load generator or the fake that its own write had just woken
 * (perf sched). Each slice's calls/s, p50 and p99 go to stderr as it ends,
 * and each target's latency percentiles (p50 to p99.9) before the summary.
 */

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    latency: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '4' },
    slice: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '8' },
    connections: { type: 'string' },
    'no-floor': { type: 'boolean', default: false },
    env: { type: 'string', multiple: true, default: [] },
  },
});

const usage = 'usage: node bench/ab.ts [--latency] [--rounds N] [--slice S] [--warmup S] [--connections N] [--no-floor] [--env NAME:KEY=VALUE ...] NAME=CHECKOUT ...';
const specs = positionals.map((p) => {
  const at = p.indexOf('=');
  if (at <= 0) fail(`"${p}" is not NAME=CHECKOUT`);
  return { name: p.slice(0, at), checkout: resolve(p.slice(at + 1)) as string | undefined, env: {} as Record<string, string> };
});
for (const e of values.env) {
  const colon = e.indexOf(':');
  const eq = e.indexOf('=', colon);
  const spec = specs.find((s) => s.name === e.slice(0, colon));
  if (colon <= 0 || eq <= colon + 1 || !spec) fail(`--env "${e}" is not NAME:KEY=VALUE for a NAME given`);
  spec.env[e.slice(colon + 1, eq)] = e.slice(eq + 1);
}
if (specs.length === 0 && values['no-floor']) fail('nothing to measure');
const rounds = positiveInt(values.rounds, '--rounds');
const sliceS = positiveInt(values.slice, '--slice');
const warmupS = positiveInt(values.warmup, '--warmup');
const connections = values.connections === undefined ? (values.latency ? 10 : 50) : positiveInt(values.connections, '--connections');

console.error(`ab: ${connections} connections, ${values.latency ? '20 ms' : '0 ms'} fake; ${warmupS} s of warm-up each, then ${rounds} rounds of ${sliceS} s slices`);
const tallies = await runAb(specs, { latency: values.latency, rounds, sliceS, warmupS, connections, floor: !values['no-floor'], verbose: true });
const floor = tallies.find((t) => t.name === FLOOR_NAME);
const base = floor ? summarize(floor) : undefined;
for (const t of tallies) {
  const sorted = [...t.latencies].sort((a, b) => a - b);
  console.error(`ab: ${t.name}: ${[50, 75, 90, 95, 97, 98, 99, 99.5, 99.9].map((q) => `p${q} ${fmt(percentile(sorted, q), 2)}`).join(', ')}`);
  const s = summarize(t);
  const perCall = (x: number, scale = 1e6) => fmt((x * scale) / t.calls, scale === 1 ? 2 : 0);
  const vsFloor = base && t !== floor ? ` (${fmt(s.rate / base.rate, 3)} of the floor's calls/s, p99 ${s.p99 >= base.p99 ? '+' : ''}${fmt(s.p99 - base.p99, 2)} ms)` : '';
  const overhead = t.overheads.length > 0 ? `; X-Gateway-Overhead-Ms p50 ${fmt(s.overheadP50, 2)}, p99 ${fmt(s.overheadP99, 2)}` : '';
  console.log(
    `${t.name}: ${fmt(s.rate)} calls/s, p50 ${fmt(s.p50, 2)} ms, p99 ${fmt(s.p99, 2)} ms${vsFloor}${overhead}; per call: CPU ${perCall(t.main)} µs main thread, ${perCall(t.cpu)} µs all threads; ` +
      `main thread waited ${perCall(t.wait)} µs for a core, blocked ${perCall(t.voluntary, 1)} and was preempted ${perCall(t.involuntary, 1)} times`,
  );
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) fail(`${flag} must be a positive integer`);
  return n;
}

function fail(message: string): never {
  console.error(`${message}\n${usage}`);
  process.exit(2);
}
