import { startServer } from './children.ts';
import { mainThreadCpuSeconds, mainThreadScheduling, processCpuSeconds, waitUntilIdle } from './cpu.ts';
import { fmt } from './format.ts';
import type { Options } from 'autocannon';
import { FAKE_TEXT, NODE_FLOOR, type RunningTarget, startGateway } from './gateway-targets.ts';
import { load, percentile } from './load.ts';

/** One gateway of an A/B: a checkout of this repository (undefined: this one) with environment of its own. */
export interface AbSpec {
  name: string;
  checkout: string | undefined;
  env: Record<string, string>;
}

export interface AbOptions {
  /** 10 connections on a fake answering after 20 ms (benchmark 5's latency load) instead of 50 on one answering at once. */
  latency: boolean;
  rounds: number;
  sliceS: number;
  warmupS: number;
  connections: number;
  /** Measure the Node floor beside the gateways. */
  floor: boolean;
  /** Each slice's figures to stderr as it ends. */
  verbose: boolean;
}

/** What one target did over all its slices. */
export interface AbTally {
  name: string;
  calls: number;
  seconds: number;
  /** CPU seconds: all the process's threads, and its main thread (the event loop). */
  cpu: number;
  main: number;
  /** Main thread: seconds runnable but waiting for a core, voluntary and involuntary context switches. */
  wait: number;
  voluntary: number;
  involuntary: number;
  /** Exact latency of every 2xx response, ms. */
  latencies: number[];
  /** X-Gateway-Overhead-Ms of every 2xx response that carried it (the gateway's own time before its first byte). */
  overheads: number[];
  /** Answers not 2xx, and socket errors. */
  failed: number;
}

export const FLOOR_NAME = 'node floor';

const OVERHEAD = 'x-gateway-overhead-ms';

/**
 * An interleaved A/B of gateway checkouts on benchmark 5's load, beside the
 * Node floor, on one fake provider: each target serves `warmupS` first, then
 * slices take turns (in order, then reversed, `rounds` times), each target
 * idle before its own, so that the shared machine's noisy stretches weigh on
 * every target alike. Every request is new (a cache miss).
 */
export async function runAb(specs: AbSpec[], options: AbOptions): Promise<AbTally[]> {
  const fake = await startServer<{ url: string }>('fake provider', new URL('../servers/fake-provider.ts', import.meta.url), {
    FAKE_BEHAVIOUR: JSON.stringify(options.latency ? { text: FAKE_TEXT, latencyMs: 20, chunkDelayMs: 10 } : { text: FAKE_TEXT }),
  });
  const upstream = { url: fake.info.url, pid: fake.pid, apiKey: 'sk-bench-fake' };
  const running: { tally: AbTally; target: RunningTarget }[] = [];
  try {
    for (const spec of specs) running.push({ tally: tally(spec.name), target: await startGateway(upstream, spec.name, spec.env, spec.checkout) });
    if (options.floor) running.push({ tally: tally(FLOOR_NAME), target: await NODE_FLOOR.start(upstream) });
    for (const r of running) await load({ ...requestOptions(r.target, options.connections), duration: options.warmupS });
    for (let round = 0; round < options.rounds; round++) {
      for (const r of round % 2 === 0 ? running : [...running].reverse()) {
        await measureSlice(r.tally, r.target.pid, { ...requestOptions(r.target, options.connections), duration: options.sliceS }, options.verbose);
      }
    }
    return running.map((r) => r.tally);
  } finally {
    for (const r of running) await r.target.stop();
    await fake.stop();
  }
}

export function tally(name: string): AbTally {
  return { name, calls: 0, seconds: 0, cpu: 0, main: 0, wait: 0, voluntary: 0, involuntary: 0, latencies: [], overheads: [], failed: 0 };
}

/** Benchmark 5's requests: every one new (autocannon's [<id>]), so no target answers from a cache. */
function requestOptions(t: RunningTarget, connections: number) {
  const body = JSON.stringify({ model: t.model ?? 'fake-model', messages: [{ role: 'user', content: 'Say hello, [<id>].' }] });
  return { url: `${t.url}/chat/completions`, method: 'POST' as const, headers: t.headers, body, idReplacement: true, connections };
}

/** Raw header list of one response (autocannon's client 'headers' event: names and values, flat). */
interface HeadersEvent {
  statusCode: number;
  headers: string[];
}

/**
 * One measured slice of `load` (autocannon's options: url, body, connections, duration) against the process `pid`,
 * added to `t`: its CPU (all threads and the main thread), the main thread's scheduling, the exact latency and the
 * X-Gateway-Overhead-Ms of every 2xx answer. The process is let go idle first. Any request shape: the Messages
 * benchmark (bench/benchmarks/gateway-messages.ts) measures its surfaces with it.
 */
export async function measureSlice(t: AbTally, pid: number, request: Options, verbose: boolean): Promise<void> {
  await waitUntilIdle(pid);
  const cpu = processCpuSeconds(pid);
  const main = mainThreadCpuSeconds(pid);
  const sched = mainThreadScheduling(pid);
  const overheads = t.overheads;
  const setupClient = (client: { on(event: 'headers', listener: (e: HeadersEvent) => void): void }) => {
    client.on('headers', (e) => {
      if (e.statusCode < 200 || e.statusCode >= 300) return;
      const h = e.headers;
      for (let i = 0; i < h.length; i += 2) {
        if (h[i]!.length === OVERHEAD.length && h[i]!.toLowerCase() === OVERHEAD) {
          overheads.push(Number(h[i + 1]));
          return;
        }
      }
    });
  };
  const { result, ok } = await load({ ...request, setupClient }, true);
  const after = mainThreadScheduling(pid);
  t.cpu += processCpuSeconds(pid) - cpu;
  t.main += mainThreadCpuSeconds(pid) - main;
  t.wait += after.waitSeconds - sched.waitSeconds;
  t.voluntary += after.voluntary - sched.voluntary;
  t.involuntary += after.involuntary - sched.involuntary;
  t.calls += ok.length;
  t.seconds += result.duration;
  t.failed += result.non2xx + result.errors;
  for (const s of ok) t.latencies.push(s.ms);
  if (verbose) {
    const own = ok.map((s) => s.ms).sort((a, b) => a - b);
    console.error(`ab: ${t.name}: slice of ${fmt(ok.length / result.duration)} calls/s, p50 ${fmt(percentile(own, 50), 2)} ms, p99 ${fmt(percentile(own, 99), 2)} ms`);
  }
  if (result.non2xx > 0 || result.errors > 0) console.error(`ab: ${t.name}: ${result.non2xx} answers not 2xx, ${result.errors} errors in a slice`);
}

/** A target's figures: calls/s, latency and overhead percentiles (ms), CPU per call (µs). */
export interface AbSummary {
  rate: number;
  p50: number;
  p99: number;
  overheadP50: number;
  overheadP99: number;
  mainUs: number;
  cpuUs: number;
}

export function summarize(t: AbTally): AbSummary {
  const sorted = [...t.latencies].sort((a, b) => a - b);
  const overheads = [...t.overheads].sort((a, b) => a - b);
  return {
    rate: t.calls / t.seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    overheadP50: percentile(overheads, 50),
    overheadP99: percentile(overheads, 99),
    mainUs: (t.main * 1e6) / t.calls,
    cpuUs: (t.cpu * 1e6) / t.calls,
  };
}
