import { type ChildServer, startServer } from '../lib/children.ts';
import { cpuWindow, mainThreadCpuSeconds, waitUntilIdle } from '../lib/cpu.ts';
import { call, fmt, log } from '../lib/format.ts';
import { FAKE_TEXT, type RunningTarget, TARGETS, type Target, type Upstream } from '../lib/gateway-targets.ts';
import { load, percentile, problems } from '../lib/load.ts';
import { idleNodeRss, rssMiB, rssPeak } from '../lib/memory.ts';
import type { Row } from '../lib/report.ts';
import { streamTtfb } from '../lib/ttfb.ts';
import { idleMemory } from './idle-memory.ts';

/**
 * The gateway benchmark: OpenAI chat completions sent straight to the fake
 * provider (the baseline, TARGETS[0]) and through each other target, side by
 * side in one run, against one fake answering at once (throughput, CPU,
 * memory) and one answering after 20 ms (added latency, streaming time to
 * first byte). Every target and both fakes run in their own processes.
 */

const THROUGHPUT_CONNECTIONS = 50;
const LATENCY_CONNECTIONS = 10;
/**
 * Warm-up before the latency slices, per target: the latency phase starts
 * every target afresh (on the 20 ms fake), and a fresh process's first
 * seconds are its start-up, not its steady state. Measured here in 2 s
 * slices from the first request at 10 connections: this gateway's p99 was
 * 99 ms in the first slice, 37 ms in the second and 26 to 29 ms from the
 * third on, beside the floor's 59.5 ms, then 24 to 31 ms; with 2 s of
 * warm-up (until 28 November 2026) the second slice's tail was in every
 * measured p99. The first COLD_S seconds are recorded apart and reported,
 * not judged.
 */
const LATENCY_WARMUP_S = 8;
const COLD_S = 2;
/**
 * Before the throughput slices each target serves 8 s of load first: a
 * process's first seconds under load are not its steady state. Measured here
 * on this gateway in 2 s slices from its first request: 7.7 to 8.0 minor page
 * faults and 860 to 940 µs of CPU per call in the first, about 3 and 560 to
 * 630 µs in the second, then 0.3 to 0.5 faults and 340 to 450 µs from the
 * fourth second on (the heap, the young generation and the allocator's arenas
 * growing to their working size, and code still being optimized); the floor
 * settles from 273 µs to about 120 µs by the fifth second. On these machines a
 * page touched for the first time costs about 11 µs (a Firecracker VM that
 * hands freed pages back to its host), twenty times a bare machine's, so with
 * 2 s of warm-up the first slice measured part of the start-up instead.
 */
const THROUGHPUT_WARMUP_S = 8;
const SLICE_S = 5;
/**
 * Passes over the targets (each in order, then reversed: two slices per
 * target per pass). A p99 read from 10 s at 10 connections (two slices,
 * until 29 November 2026) rests on a few dozen slow calls, and those come
 * in bursts: the fake answers the ten connections together, so the last of
 * a burst waits for the other nine. Measured here in 5 s slices, eight per
 * target in one run: this gateway's p99 ranged 24.9 to 28.2 ms from slice
 * to slice, the floor's 22.8 to 25.6, while the gap between the two pooled
 * p99s was +1.9 ms; whole runs with two slices each read gaps from -1.1 to
 * +5.4 ms. Three passes (30 s per target) pool three times as many
 * bursts into each judged p99; two passes (20 s) twice the calls for
 * throughput. Each slice's own p99 is reported beside the pooled one.
 */
const THROUGHPUT_PASSES = 2;
const LATENCY_PASSES = 3;
const MEMORY_REQUESTS = 100_000;
const TTFB_REQUESTS = 200;
const TTFB_CONCURRENCY = 4;
const API_KEY = 'sk-bench-fake';

const MESSAGES = [{ role: 'user', content: 'Say hello.' }];
const body = (t: RunningTarget) => JSON.stringify({ model: t.model ?? 'fake-model', messages: MESSAGES });
/**
 * Every measured request differs (autocannon puts a fresh id in place of
 * `[<id>]`), so no target can answer from a cache: the gateway runs every
 * stage, its response cache included, and every call goes upstream.
 */
const uniqueBody = (t: RunningTarget) => JSON.stringify({ model: t.model ?? 'fake-model', messages: [{ role: 'user', content: 'Say hello, [<id>].' }] });
let streamCounter = 0;
const streamBody = (t: RunningTarget) => () =>
  JSON.stringify({
    model: t.model ?? 'fake-model',
    messages: [{ role: 'user', content: `Say hello, ${++streamCounter}.` }],
    stream: true,
    stream_options: { include_usage: true },
  });

interface Measured {
  target: Target;
  /** Why it could not be measured (its check request failed), if so. */
  broken?: string;
  notes: string[];
  /** Requests sent to it with the 0 ms upstream. */
  sent: number;
  ok: number;
  seconds: number;
  cpuSeconds: number;
  /** The main thread's share of cpuSeconds (the event loop that answers calls; the rest is V8's helpers and the target's other threads). */
  mainCpuSeconds: number;
  trouble: string[];
  /** after: once the process is idle after MEMORY_REQUESTS (in a row, for the flatness check); after2: after as many again (flat: no growth between them). */
  rss: { idle: number; load: number; after: number; afterRequests: number; after2: number; after2Requests: number; afterGc?: number; after2Gc?: number };
  /** The live heap after a full GC at `after` and `after2`, MiB, where the target tells. */
  heap?: { after: number; after2: number };
  latencies: number[];
  /** The p99 of each latency slice on its own (reported: how much a slice's tail moves from one to the next). */
  sliceP99: number[];
  /** Latencies of the first COLD_S seconds under load of the fresh process of the latency phase (reported, not judged). */
  coldLatencies: number[];
  ttfb: number[];
  streamFailures: Record<string, number>;
  firstStreamFailure?: string;
}

async function startFake(name: string, behaviour: Record<string, unknown>): Promise<ChildServer<{ url: string }>> {
  return startServer<{ url: string }>(name, new URL('../servers/fake-provider.ts', import.meta.url), { FAKE_BEHAVIOUR: JSON.stringify(behaviour) });
}

/** One non-streamed request: an error message unless it answers 200 with the fake's text. */
async function check(t: RunningTarget): Promise<string | undefined> {
  const res = await call(`${t.url}/chat/completions`, { method: 'POST', headers: t.headers, body: body(t) });
  return res.status === 200 && res.body.includes(FAKE_TEXT) ? undefined : `check request answered ${res.status} ${res.body.slice(0, 200)}`;
}

/** Starts every target on `upstream`, checks each, runs `body` and stops them whatever happens. */
async function withTargets(upstream: Upstream, results: Measured[], measure: (running: (RunningTarget | undefined)[]) => Promise<void>) {
  const running: (RunningTarget | undefined)[] = [];
  try {
    for (const [i, m] of results.entries()) {
      let t: RunningTarget;
      try {
        t = await m.target.start(upstream);
      } catch (err) {
        m.broken ??= `could not start: ${(err as Error).message}`;
        running.push(undefined);
        continue;
      }
      running.push(t);
      const problem = await check(t);
      if (problem) {
        m.broken ??= problem;
        running[i] = undefined;
        await t.stop();
      }
    }
    await measure(running);
  } finally {
    for (const [i, t] of running.entries()) {
      const note = t?.note?.();
      if (note) results[i]!.notes.push(note);
      await t?.stop();
    }
  }
}

/** Each target once in list order, then once in reverse (`passes` times), so that drift in the machine's speed weighs on each alike. */
const sliceOrder = (n: number, passes = 1) => Array.from({ length: passes }, () => [...Array(n).keys(), ...[...Array(n).keys()].reverse()]).flat();
const options = (t: RunningTarget) => ({ url: `${t.url}/chat/completions`, method: 'POST', headers: t.headers, body: uniqueBody(t), idReplacement: true });

export async function gatewayComparison() {
  log('gateway: starting two fake providers (0 ms and 20 ms)');
  const fast = await startFake('fake-0ms', { text: FAKE_TEXT });
  const slow = await startFake('fake-20ms', { text: FAKE_TEXT, latencyMs: 20, chunkDelayMs: 10 });
  const results: Measured[] = TARGETS.map((target) => ({
    target,
    notes: [],
    sent: 0,
    ok: 0,
    seconds: 0,
    cpuSeconds: 0,
    mainCpuSeconds: 0,
    trouble: [],
    rss: { idle: Number.NaN, load: 0, after: Number.NaN, afterRequests: 0, after2: Number.NaN, after2Requests: 0 },
    latencies: [],
    sliceP99: [],
    coldLatencies: [],
    ttfb: [],
    streamFailures: {},
  }));
  try {
    await withTargets({ url: fast.info.url, pid: fast.pid, apiKey: API_KEY }, results, async (running) => {
      for (const [i, t] of running.entries()) {
        if (!t) continue;
        await waitUntilIdle(t.pid);
        results[i]!.rss.idle = rssMiB(t.pid);
      }
      log(`gateway: throughput at ${THROUGHPUT_CONNECTIONS} connections, 0 ms upstream, ${SLICE_S} s slices in order and reversed, ${THROUGHPUT_PASSES} times`);
      for (const [i, t] of running.entries()) {
        if (t) results[i]!.sent += (await load({ ...options(t), connections: THROUGHPUT_CONNECTIONS, duration: THROUGHPUT_WARMUP_S })).result.requests.sent;
      }
      for (const i of sliceOrder(running.length, THROUGHPUT_PASSES)) {
        const t = running[i];
        const m = results[i]!;
        if (!t) continue;
        const cpu = cpuWindow(t.pid);
        const mainBefore = mainThreadCpuSeconds(t.pid);
        const peak = rssPeak(t.pid);
        const { result } = await load({ ...options(t), connections: THROUGHPUT_CONNECTIONS, duration: SLICE_S });
        const shares = cpu();
        m.rss.load = Math.max(m.rss.load, peak());
        m.sent += result.requests.sent;
        m.ok += result['2xx'];
        m.seconds += result.duration;
        m.cpuSeconds += shares.server * result.duration;
        m.mainCpuSeconds += mainThreadCpuSeconds(t.pid) - mainBefore;
        const trouble = problems(result);
        if (trouble) m.trouble.push(trouble);
      }
      for (const [i, t] of running.entries()) {
        const m = results[i]!;
        if (!t) continue;
        // The flatness check (this gateway and the floor) compares two readings each taken after MEMORY_REQUESTS in a
        // row. The first used to follow a top-up to MEMORY_REQUESTS in all, 30,000 to 40,000 calls after the process had
        // idled through the other targets' slices and memory phases, which V8 and the allocator spend giving memory
        // back: that reading was below the working set (460 MiB against 499 to 502 after 100,000 in a row) and the
        // "growth" over the next 100,000 was the process refilling it (+12 to +20 MiB; +2.7 to +5.8 MiB per 100,000
        // in a row, measured here). Others are topped up to MEMORY_REQUESTS, for their RSS row only.
        const flat = m.target.name === 'this gateway' || m.target.name === 'node floor';
        const more = flat ? MEMORY_REQUESTS : MEMORY_REQUESTS - m.sent;
        if (more > 0) {
          log(`gateway: ${m.target.name}: ${more} more requests${flat ? ' in a row' : ` to reach ${MEMORY_REQUESTS}`}`);
          m.sent += (await load({ ...options(t), connections: THROUGHPUT_CONNECTIONS, amount: more })).result.requests.sent;
        }
        await waitUntilIdle(t.pid);
        m.rss.after = rssMiB(t.pid);
        m.rss.afterRequests = m.sent;
        const heapAfter = await t.heapAfterGc?.();
        // Read again right after that full GC: without the heap V8 reserved for garbage and keeps for a while, which
        // the idle reading holds in whatever amount the last GC cycle left (what the flatness target is judged on).
        if (heapAfter !== undefined) m.rss.afterGc = rssMiB(t.pid);
        // As many requests again: memory that keeps growing with requests served is a leak, a working set is not.
        // (This gateway and the floor only: Portkey's 1k/s would add minutes to every run.)
        if (!flat) continue;
        log(`gateway: ${m.target.name}: ${MEMORY_REQUESTS} more requests for the flatness check`);
        m.sent += (await load({ ...options(t), connections: THROUGHPUT_CONNECTIONS, amount: MEMORY_REQUESTS })).result.requests.sent;
        await waitUntilIdle(t.pid);
        m.rss.after2 = rssMiB(t.pid);
        m.rss.after2Requests = m.sent;
        const heapAfter2 = await t.heapAfterGc?.();
        if (heapAfter2 !== undefined) m.rss.after2Gc = rssMiB(t.pid);
        if (heapAfter !== undefined && heapAfter2 !== undefined) m.heap = { after: heapAfter / 2 ** 20, after2: heapAfter2 / 2 ** 20 };
      }
    });

    await withTargets({ url: slow.info.url, pid: slow.pid, apiKey: API_KEY }, results, async (running) => {
      log(`gateway: latency at ${LATENCY_CONNECTIONS} connections and streaming TTFB, 20 ms upstream`);
      for (const [i, t] of running.entries()) {
        if (!t) continue;
        const { ok } = await load({ ...options(t), connections: LATENCY_CONNECTIONS, duration: COLD_S }, true);
        for (const s of ok) results[i]!.coldLatencies.push(s.ms);
        await load({ ...options(t), connections: LATENCY_CONNECTIONS, duration: LATENCY_WARMUP_S - COLD_S });
      }
      for (const i of sliceOrder(running.length, LATENCY_PASSES)) {
        const t = running[i];
        if (!t) continue;
        const { result, ok } = await load({ ...options(t), connections: LATENCY_CONNECTIONS, duration: SLICE_S }, true);
        for (const s of ok) results[i]!.latencies.push(s.ms);
        results[i]!.sliceP99.push(percentile(sorted(ok.map((s) => s.ms)), 99));
        const trouble = problems(result);
        if (trouble) results[i]!.trouble.push(`20 ms upstream: ${trouble}`);
      }
      for (const i of sliceOrder(running.length)) {
        const t = running[i];
        const m = results[i]!;
        if (!t) continue;
        const run = await streamTtfb(t.url, t.headers, streamBody(t), { requests: TTFB_REQUESTS / 2, concurrency: TTFB_CONCURRENCY });
        m.ttfb.push(...run.ttfb);
        for (const [k, n] of Object.entries(run.failures)) m.streamFailures[k] = (m.streamFailures[k] ?? 0) + n;
        m.firstStreamFailure ??= run.firstFailure;
      }
    });
  } finally {
    await Promise.all([fast.stop(), slow.stop()]);
  }
  const idleNode = await idleNodeRss();
  const reported = report(results, idleNode);
  const memory = await idleMemory(idleNode.ts);
  return { rows: [...reported.rows, ...memory.rows], details: reported.details, raw: { ...reported.raw, idleServices: memory.raw } };
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const ms = (x: number) => (Number.isNaN(x) ? 'n/a' : x < 10 ? fmt(x, 2) : fmt(x, 1));
const signed = (x: number) => (Number.isNaN(x) ? 'n/a' : `${x >= 0 ? '+' : ''}${ms(x)}`);
const mib = (x: number) => (Number.isNaN(x) ? 'n/a' : fmt(x, 0));

function summarize(m: Measured) {
  const lat = sorted(m.latencies);
  const ttfb = sorted(m.ttfb);
  return {
    rate: m.ok / m.seconds,
    cpuUs: (m.cpuSeconds * 1e6) / m.ok,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    ttfb50: percentile(ttfb, 50),
    ttfb99: percentile(ttfb, 99),
  };
}

function report(results: Measured[], idleNode: { js: number; ts: number }) {
  const [base, ...others] = results;
  const b = summarize(base!);
  const rows: Row[] = [];
  const details: string[] = [];
  for (const m of others) {
    const s = summarize(m);
    const name = m.target.name;
    if (m.broken) {
      rows.push({ benchmark: `gateway: ${name}`, measured: m.broken, baseline: '', result: '', target: '', pass: false, verdict: 'BROKEN' });
      continue;
    }
    const info = { target: 'none (compared)', pass: true, verdict: 'info' };
    rows.push(
      { benchmark: `gateway throughput, ${name}`, measured: `${fmt(s.rate)} req/s`, baseline: `direct ${fmt(b.rate)} req/s`, result: `${fmt(s.rate / b.rate, 3)} of direct`, ...info },
      {
        benchmark: `gateway added latency, ${name}`,
        measured: `p50 ${ms(s.p50)} ms, p99 ${ms(s.p99)} ms`,
        baseline: `direct p50 ${ms(b.p50)} ms, p99 ${ms(b.p99)} ms`,
        result: `p50 ${signed(s.p50 - b.p50)} ms, p99 ${signed(s.p99 - b.p99)} ms`,
        ...info,
      },
    );
    const streamFailed = Object.values(m.streamFailures).reduce((a, n) => a + n, 0);
    rows.push({
      benchmark: `gateway stream TTFB, ${name}`,
      measured: m.ttfb.length ? `p50 ${ms(s.ttfb50)} ms, p99 ${ms(s.ttfb99)} ms` : 'no stream answered',
      baseline: `direct p50 ${ms(b.ttfb50)} ms, p99 ${ms(b.ttfb99)} ms`,
      result: m.ttfb.length ? `p50 ${signed(s.ttfb50 - b.ttfb50)} ms, p99 ${signed(s.ttfb99 - b.ttfb99)} ms` : 'n/a',
      ...info,
      ...(streamFailed ? { verdict: `FAILED ${streamFailed}/${TTFB_REQUESTS}` } : {}),
    });
    rows.push(
      { benchmark: `gateway CPU per request, ${name}`, measured: `${fmt(s.cpuUs)} µs`, baseline: `fake provider ${fmt(b.cpuUs)} µs`, result: `${fmt(s.cpuUs / b.cpuUs, 2)} × the fake's`, ...info },
      {
        benchmark: `gateway RSS, ${name}`,
        measured: `idle ${mib(m.rss.idle)}, load ${mib(m.rss.load)}, after ${fmt(m.rss.afterRequests / 1000)}k ${mib(m.rss.after)}, after ${fmt(m.rss.after2Requests / 1000)}k ${mib(m.rss.after2)} MiB`,
        baseline: `fake idle ${mib(base!.rss.idle)}, load ${mib(base!.rss.load)} MiB`,
        result: `+${mib(m.rss.after - m.rss.idle)} MiB kept`,
        ...info,
      },
    );
    if (streamFailed) details.push(`${name}: ${TTFB_REQUESTS} stream: true requests, failures by status ${JSON.stringify(m.streamFailures)}; the first answered: ${m.firstStreamFailure}.`);
    for (const note of m.notes) details.push(note);
    if (m.trouble.length) details.push(`${name}: not 2xx: ${m.trouble.join('; ')}.`);
  }
  rows.push(...targetRows(results));
  details.push(
    `Gateway benchmark: throughput and CPU at ${THROUGHPUT_CONNECTIONS} connections on the 0 ms fake (${SLICE_S} s slices, each target ${THROUGHPUT_PASSES * 2} times: in order, then reversed, ${THROUGHPUT_PASSES} times over, after ${THROUGHPUT_WARMUP_S} s of warm-up); ` +
      `latency at ${LATENCY_CONNECTIONS} connections on a fake answering after 20 ms (each target started afresh for it, then ${LATENCY_WARMUP_S} s of warm-up, then ${LATENCY_PASSES * 2} slices of ${SLICE_S} s each, ${LATENCY_PASSES} passes in order and reversed); stream TTFB over ${TTFB_REQUESTS} stream: true requests, ${TTFB_CONCURRENCY} at a time, from the send to the first body byte (the 20 ms fake then sends an event every 10 ms); ` +
      `RSS from /proc/<pid>/status: idle after start, peak during the throughput slices, and once the process is idle after ${MEMORY_REQUESTS / 1000}k requests (for this gateway and the floor, after ${MEMORY_REQUESTS / 1000}k in a row, then after as many again). The direct figures are the fake provider's own; it also served every other target. ` +
      `An idle Node ${process.version} process here: ${mib(idleNode.js)} MiB as JavaScript (Portkey), ${mib(idleNode.ts)} MiB as TypeScript (the fake, the floor; type stripping loads a transpiler).`,
  );
  const threads = results
    .filter((m) => m.ok > 0 && m.target.name !== base!.target.name && Number.isFinite(m.mainCpuSeconds))
    .map((m) => `${m.target.name} ${fmt((m.mainCpuSeconds * 1e6) / m.ok, 0)} of ${fmt((m.cpuSeconds * 1e6) / m.ok, 0)} µs`);
  if (threads.length) details.push(`CPU per call on the main thread (the event loop that answers calls) of all the process's, in the throughput slices: ${threads.join('; ')}.`);
  const spread = results
    .filter((m) => m.sliceP99.length > 0)
    .map((m) => {
      const p = sorted(m.sliceP99);
      return `${m.target.name} ${ms(p[0]!)} to ${ms(p[p.length - 1]!)} ms (median ${ms(percentile(p, 50))})`;
    });
  if (spread.length) details.push(`p99 of each ${SLICE_S} s latency slice on its own (${LATENCY_PASSES * 2} per target; the judged p99 pools them): ${spread.join('; ')}.`);
  const cold = results
    .filter((m) => m.coldLatencies.length > 0)
    .map((m) => {
      const lat = sorted(m.coldLatencies);
      return `${m.target.name} p50 ${ms(percentile(lat, 50))}, p99 ${ms(percentile(lat, 99))} ms`;
    });
  if (cold.length) details.push(`Latency in the first ${COLD_S} s under load of a fresh process (start-up; part of the warm-up, not judged), ${LATENCY_CONNECTIONS} connections, 20 ms upstream: ${cold.join('; ')}.`);
  if (base!.trouble.length) details.push(`direct: not 2xx: ${base!.trouble.join('; ')}.`);
  const raw = Object.fromEntries(results.map((m) => [m.target.name, { ...summarize(m), mainCpuUs: (m.mainCpuSeconds * 1e6) / m.ok, rss: m.rss, sent: m.sent, broken: m.broken, streamFailures: m.streamFailures, notes: m.notes }]));
  return { rows: rows.map((r) => ({ id: '5', ...r })), details, raw: { gateway: { targets: raw, idleNode } } };
}

/** Flat: at most this much more RSS after the second MEMORY_REQUESTS in a row than after the first. */
const FLAT_MIB = 8;

/**
 * The issue's targets for this gateway, against the Node floor measured in
 * the same run: throughput at least half the floor's, p99 latency within
 * 2 ms of the floor's, and RSS flat from 100k to 200k requests.
 */
function targetRows(results: Measured[]): Row[] {
  const floor = results.find((m) => m.target.name === 'node floor');
  const gateway = results.find((m) => m.target.name === 'this gateway');
  if (!floor || !gateway || floor.broken || gateway.broken) return [];
  const f = summarize(floor);
  const g = summarize(gateway);
  const ratio = g.rate / f.rate;
  const p99Gap = g.p99 - f.p99;
  // Judged after a full GC where the target can be asked for one (this gateway can), else on the idle readings.
  const { afterGc, after2Gc } = gateway.rss;
  const gcRead = afterGc !== undefined && after2Gc !== undefined;
  const growth = gcRead ? after2Gc - afterGc : gateway.rss.after2 - gateway.rss.after;
  return [
    {
      benchmark: 'gateway throughput vs the Node floor',
      measured: `${fmt(g.rate)} req/s`,
      baseline: `floor ${fmt(f.rate)} req/s`,
      result: `${fmt(ratio, 3)} of the floor`,
      target: '>= 0.5 of the floor',
      pass: ratio >= 0.5,
      verdict: ratio >= 0.5 ? 'PASS' : 'FAIL',
    },
    {
      benchmark: 'gateway p99 latency vs the Node floor (20 ms upstream, 10 connections)',
      measured: `p99 ${ms(g.p99)} ms (p50 ${ms(g.p50)})`,
      baseline: `floor p99 ${ms(f.p99)} ms (p50 ${ms(f.p50)})`,
      result: `${signed(p99Gap)} ms`,
      target: 'within 2 ms of the floor',
      pass: p99Gap <= 2,
      verdict: p99Gap <= 2 ? 'PASS' : 'FAIL',
    },
    {
      benchmark: 'gateway RSS flat after 100,000 requests (each reading after 100,000 in a row)',
      measured: gcRead
        ? `after a full GC: ${mib(afterGc)} MiB after ${fmt(gateway.rss.afterRequests / 1000)}k, ${mib(after2Gc)} MiB after ${fmt(gateway.rss.after2Requests / 1000)}k (idle before it: ${mib(gateway.rss.after)}, ${mib(gateway.rss.after2)})`
        : `${mib(gateway.rss.after)} MiB after ${fmt(gateway.rss.afterRequests / 1000)}k, ${mib(gateway.rss.after2)} MiB after ${fmt(gateway.rss.after2Requests / 1000)}k`,
      baseline: `idle ${mib(gateway.rss.idle)} MiB`,
      result: `${growth >= 0 ? '+' : ''}${fmt(growth, 1)} MiB over the second 100k${gateway.heap ? `; live heap after GC ${fmt(gateway.heap.after, 1)} then ${fmt(gateway.heap.after2, 1)} MiB` : ''}`,
      target: `<= +${FLAT_MIB} MiB`,
      pass: growth <= FLAT_MIB,
      verdict: growth <= FLAT_MIB ? 'PASS' : 'FAIL',
    },
  ];
}
