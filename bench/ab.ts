import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startServer } from './lib/children.ts';
import { mainThreadCpuSeconds, mainThreadScheduling, processCpuSeconds, waitUntilIdle } from './lib/cpu.ts';
import { fmt } from './lib/format.ts';
import { FAKE_TEXT, NODE_FLOOR, type RunningTarget, startGateway } from './lib/gateway-targets.ts';
import { load, percentile } from './lib/load.ts';

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
 * calls per second, CPU per call on the main thread (the event loop) and in
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
  return { name: p.slice(0, at), checkout: resolve(p.slice(at + 1)), env: {} as Record<string, string> };
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

interface Tally {
  name: string;
  target: RunningTarget;
  calls: number;
  seconds: number;
  cpu: number;
  main: number;
  wait: number;
  voluntary: number;
  involuntary: number;
  latencies: number[];
}

const fake = await startServer<{ url: string }>('fake provider', new URL('./servers/fake-provider.ts', import.meta.url), {
  FAKE_BEHAVIOUR: JSON.stringify(values.latency ? { text: FAKE_TEXT, latencyMs: 20, chunkDelayMs: 10 } : { text: FAKE_TEXT }),
});
const upstream = { url: fake.info.url, pid: fake.pid, apiKey: 'sk-bench-fake' };
const tallies: Tally[] = [];
try {
  for (const spec of specs) tallies.push(tally(spec.name, await startGateway(upstream, spec.name, spec.env, spec.checkout)));
  if (!values['no-floor']) tallies.push(tally('node floor', await NODE_FLOOR.start(upstream)));
  console.error(`ab: ${connections} connections, ${values.latency ? '20 ms' : '0 ms'} fake; ${warmupS} s of warm-up each, then ${rounds} rounds of ${sliceS} s slices`);
  for (const t of tallies) await load({ ...options(t.target), duration: warmupS });
  for (let round = 0; round < rounds; round++) {
    for (const t of round % 2 === 0 ? tallies : [...tallies].reverse()) await slice(t);
  }
  report();
} finally {
  for (const t of tallies) await t.target.stop();
  await fake.stop();
}

function tally(name: string, target: RunningTarget): Tally {
  return { name, target, calls: 0, seconds: 0, cpu: 0, main: 0, wait: 0, voluntary: 0, involuntary: 0, latencies: [] };
}

/** Benchmark 5's requests: every one new (autocannon's [<id>]), so no target answers from a cache. */
function options(t: RunningTarget) {
  const body = JSON.stringify({ model: t.model ?? 'fake-model', messages: [{ role: 'user', content: 'Say hello, [<id>].' }] });
  return { url: `${t.url}/chat/completions`, method: 'POST' as const, headers: t.headers, body, idReplacement: true, connections };
}

async function slice(t: Tally): Promise<void> {
  const pid = t.target.pid;
  await waitUntilIdle(pid);
  const cpu = processCpuSeconds(pid);
  const main = mainThreadCpuSeconds(pid);
  const sched = mainThreadScheduling(pid);
  const { result, ok } = await load({ ...options(t.target), duration: sliceS }, true);
  const after = mainThreadScheduling(pid);
  t.cpu += processCpuSeconds(pid) - cpu;
  t.main += mainThreadCpuSeconds(pid) - main;
  t.wait += after.waitSeconds - sched.waitSeconds;
  t.voluntary += after.voluntary - sched.voluntary;
  t.involuntary += after.involuntary - sched.involuntary;
  t.calls += ok.length;
  t.seconds += result.duration;
  for (const s of ok) t.latencies.push(s.ms);
  const own = ok.map((s) => s.ms).sort((a, b) => a - b);
  console.error(`ab: ${t.name}: slice of ${fmt(ok.length / result.duration)} calls/s, p50 ${fmt(percentile(own, 50), 2)} ms, p99 ${fmt(percentile(own, 99), 2)} ms`);
  if (result.non2xx > 0 || result.errors > 0) console.error(`ab: ${t.name}: ${result.non2xx} answers not 2xx, ${result.errors} errors in a slice`);
}

function report(): void {
  const floor = tallies.find((t) => t.name === 'node floor');
  const summary = (t: Tally) => {
    const sorted = [...t.latencies].sort((a, b) => a - b);
    return { rate: t.calls / t.seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  };
  const base = floor ? summary(floor) : undefined;
  const perCall = (t: Tally, x: number, scale = 1e6) => fmt((x * scale) / t.calls, scale === 1 ? 2 : 0);
  for (const t of tallies) {
    const sorted = [...t.latencies].sort((a, b) => a - b);
    console.error(`ab: ${t.name}: ${[50, 75, 90, 95, 97, 98, 99, 99.5, 99.9].map((q) => `p${q} ${fmt(percentile(sorted, q), 2)}`).join(', ')}`);
    const s = summary(t);
    const vsFloor = base && t !== floor ? ` (${fmt(s.rate / base.rate, 3)} of the floor's calls/s, p99 ${s.p99 >= base.p99 ? '+' : ''}${fmt(s.p99 - base.p99, 2)} ms)` : '';
    console.log(
      `${t.name}: ${fmt(s.rate)} calls/s, p50 ${fmt(s.p50, 2)} ms, p99 ${fmt(s.p99, 2)} ms${vsFloor}; per call: CPU ${perCall(t, t.main)} µs main thread, ${perCall(t, t.cpu)} µs all threads; ` +
        `main thread waited ${perCall(t, t.wait)} µs for a core, blocked ${perCall(t, t.voluntary, 1)} and was preempted ${perCall(t, t.involuntary, 1)} times`,
    );
  }
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
