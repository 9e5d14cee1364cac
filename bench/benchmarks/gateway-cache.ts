import type { Options, Request } from 'autocannon';
import { createFakeProvider } from '../../tools/fake-provider/server.ts';
import { type ChildServer, startServer } from '../lib/children.ts';
import { waitUntilIdle } from '../lib/cpu.ts';
import { call, fmt, log } from '../lib/format.ts';
import { GATEWAY, type RunningTarget } from '../lib/gateway-targets.ts';
import { load, percentile, problems } from '../lib/load.ts';
import { rssMiB, rssPeak } from '../lib/memory.ts';
import type { Row } from '../lib/report.ts';

/**
 * The response cache and in-flight dedup (bench/run.ts part `cache`),
 * against this gateway's own miss path measured in the same run:
 * 1. cache hits against misses, both on a fake answering at once (0 ms):
 *    the same request again and again (every request after the first a
 *    hit) against a request made unique by a counter in its message
 *    (every one a miss: key, lookup, the upstream call through a flight,
 *    the answer stored; the ring fills up to its bound meanwhile) and
 *    against X-Gateway-No-Cache (what the miss path costs), each at 50
 *    connections, in 3 s slices hit, miss, bypass, bypass, miss, hit after
 *    1 s of warm-up; throughput, latency and the gateway's RSS;
 * 2. dedup: 100 identical requests at once (non-streamed, then streamed)
 *    on a fake answering after 200 ms, against the same 100 sent with
 *    X-Gateway-No-Cache (no dedup): the upstream calls the fake counted
 *    and each client's latency.
 * The fake of part 2 runs in this process, so that its call counter can be read.
 */

const CONNECTIONS = 50;
const WARMUP_S = 1;
const SLICE_S = 3;
const CONCURRENT = 100;
const UPSTREAM_MS = 200;
const TEXT = 'Hello from the fake provider, friend.';

const fixedBody = (t: RunningTarget) => JSON.stringify({ model: t.model, messages: [{ role: 'user', content: 'Say hello.' }], temperature: 0 });

/** autocannon options whose every request is either the same (hits) or unique (misses). */
function options(t: RunningTarget, kind: Kind, duration: number): Options {
  const headers = kind === 'bypass' ? { ...t.headers, 'x-gateway-no-cache': 'true' } : t.headers;
  const base = { url: `${t.url}/chat/completions`, method: 'POST' as const, headers, connections: CONNECTIONS, duration };
  if (kind !== 'miss') return { ...base, body: fixedBody(t) };
  let n = 0;
  const unique = () => JSON.stringify({ model: t.model, messages: [{ role: 'user', content: `Say hello, number ${++n} ${process.pid}.` }], temperature: 0 });
  return { ...base, requests: [{ setupRequest: (req: Request) => ({ ...req, body: unique() }) }] };
}

type Kind = 'hit' | 'miss' | 'bypass';

interface Slice {
  ok: number;
  seconds: number;
  latencies: number[];
  trouble: string[];
}

async function hitsAgainstMisses(t: RunningTarget) {
  const empty = (): Slice => ({ ok: 0, seconds: 0, latencies: [], trouble: [] });
  const slices: Record<Kind, Slice> = { hit: empty(), miss: empty(), bypass: empty() };
  const primed = await call(`${t.url}/chat/completions`, { method: 'POST', headers: t.headers, body: fixedBody(t) });
  if (primed.status !== 200 || !primed.body.includes(TEXT)) throw new Error(`gateway check failed: ${primed.status} ${primed.body.slice(0, 200)}`);
  await waitUntilIdle(t.pid);
  const idle = rssMiB(t.pid);
  const heapIdle = ((await t.heapAfterGc?.()) ?? Number.NaN) / 2 ** 20;
  for (const kind of ['hit', 'miss', 'bypass'] as const) await load(options(t, kind, WARMUP_S));
  let peak = 0;
  for (const kind of ['hit', 'miss', 'bypass', 'bypass', 'miss', 'hit'] as const) {
    log(`cache: ${kind} slice, ${SLICE_S} s at ${CONNECTIONS} connections`);
    const rss = rssPeak(t.pid);
    const { result, ok } = await load(options(t, kind, SLICE_S), true);
    peak = Math.max(peak, rss());
    const s = slices[kind];
    s.ok += result['2xx'];
    s.seconds += result.duration;
    for (const sample of ok) s.latencies.push(sample.ms);
    const trouble = problems(result);
    if (trouble) s.trouble.push(trouble);
  }
  await waitUntilIdle(t.pid);
  const after = rssMiB(t.pid);
  const heapAfter = ((await t.heapAfterGc?.()) ?? Number.NaN) / 2 ** 20;
  return { slices, rss: { idle, peak, after, heapIdle, heapAfter } };
}

async function dedupBurst(t: RunningTarget, fake: Awaited<ReturnType<typeof createFakeProvider>>, stream: boolean, dedup: boolean, round: number) {
  fake.calls.clear();
  const body = JSON.stringify({
    model: t.model,
    messages: [{ role: 'user', content: `Say hello, burst ${round}.` }],
    temperature: 0,
    ...(stream ? { stream: true } : {}),
  });
  const headers = dedup ? t.headers : { ...t.headers, 'x-gateway-no-cache': 'true' };
  const ms = await Promise.all(
    Array.from({ length: CONCURRENT }, async () => {
      const started = performance.now();
      const res = await fetch(`${t.url}/chat/completions`, { method: 'POST', headers, body });
      const text = await res.text();
      if (res.status !== 200 || !text.includes('Hello')) throw new Error(`burst answered ${res.status} ${text.slice(0, 200)}`);
      return performance.now() - started;
    }),
  );
  return { upstreamCalls: fake.calls.count, latencies: ms.sort((a, b) => a - b) };
}

const ms = (x: number) => (Number.isNaN(x) ? 'n/a' : x < 10 ? fmt(x, 2) : fmt(x, 1));

export async function gatewayCache(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  log('cache: starting the fake provider (0 ms) and the gateway');
  const fast: ChildServer<{ url: string }> = await startServer('fake-0ms', new URL('../servers/fake-provider.ts', import.meta.url), { FAKE_BEHAVIOUR: JSON.stringify({ text: TEXT }) });
  const slowFake = await createFakeProvider({ behaviour: { text: TEXT, latencyMs: UPSTREAM_MS }, record: 0 });
  const rows: Row[] = [];
  const details: string[] = [];
  const raw: Record<string, unknown> = {};
  try {
    const gateway = await GATEWAY.start({ url: fast.info.url, pid: fast.pid, apiKey: 'sk-bench-fake' });
    try {
      const { slices, rss } = await hitsAgainstMisses(gateway);
      const summary = (s: Slice) => {
        const lat = [...s.latencies].sort((a, b) => a - b);
        return { rate: s.ok / s.seconds, p50: percentile(lat, 50), p99: percentile(lat, 99) };
      };
      const hit = summary(slices.hit);
      const miss = summary(slices.miss);
      const bypass = summary(slices.bypass);
      raw['hitVsMiss'] = { hit, miss, bypass, rss };
      const info = { target: 'none (compared)', pass: true, verdict: 'info' };
      rows.push(
        { benchmark: 'cache hit throughput (0 ms upstream)', measured: `${fmt(hit.rate)} req/s`, baseline: `miss ${fmt(miss.rate)} req/s`, result: `${fmt(hit.rate / miss.rate, 2)} × the miss rate`, ...info },
        {
          benchmark: `cache hit latency (${CONNECTIONS} connections)`,
          measured: `p50 ${ms(hit.p50)} ms, p99 ${ms(hit.p99)} ms`,
          baseline: `miss p50 ${ms(miss.p50)} ms, p99 ${ms(miss.p99)} ms`,
          result: `p50 ${fmt(hit.p50 / miss.p50, 2)} × the miss`,
          ...info,
        },
        {
          benchmark: 'cache miss against no cache (X-Gateway-No-Cache)',
          measured: `miss ${fmt(miss.rate)} req/s, p50 ${ms(miss.p50)} ms`,
          baseline: `bypass ${fmt(bypass.rate)} req/s, p50 ${ms(bypass.p50)} ms`,
          result: `${fmt(miss.rate / bypass.rate, 2)} × the bypass rate`,
          ...info,
        },
        {
          benchmark: 'cache RSS, this gateway',
          measured: `RSS idle ${fmt(rss.idle)}, peak ${fmt(rss.peak)}, after ${fmt(rss.after)} MiB; live heap after GC ${fmt(rss.heapAfter)} MiB`,
          baseline: `live heap after GC when idle ${fmt(rss.heapIdle)} MiB`,
          result: `heap +${fmt(rss.heapAfter - rss.heapIdle)} MiB, RSS +${fmt(rss.after - rss.idle)} MiB (the ring, outside the heap: 64 MiB)`,
          ...info,
        },
      );
      for (const [kind, s] of Object.entries(slices)) if (s.trouble.length) details.push(`cache ${kind} slices: not 2xx: ${s.trouble.join('; ')}.`);
    } finally {
      await gateway.stop();
    }

    const viaSlow = await GATEWAY.start({ url: slowFake.url, pid: process.pid, apiKey: 'sk-bench-fake' });
    try {
      let round = 0;
      for (const stream of [false, true]) {
        await dedupBurst(viaSlow, slowFake, stream, true, ++round); // warm-up: connections, JIT
        const shared = await dedupBurst(viaSlow, slowFake, stream, true, ++round);
        const alone = await dedupBurst(viaSlow, slowFake, stream, false, ++round);
        const kind = stream ? 'streamed' : 'non-streamed';
        raw[`dedup ${kind}`] = { shared: shared.upstreamCalls, alone: alone.upstreamCalls, sharedMs: shared.latencies, aloneMs: alone.latencies };
        rows.push({
          benchmark: `dedup, ${CONCURRENT} identical ${kind} requests at once (${UPSTREAM_MS} ms upstream)`,
          measured: `${shared.upstreamCalls} upstream call(s); latency p50 ${ms(percentile(shared.latencies, 50))} ms, max ${ms(shared.latencies.at(-1)!)} ms`,
          baseline: `no dedup: ${alone.upstreamCalls} calls; p50 ${ms(percentile(alone.latencies, 50))} ms, max ${ms(alone.latencies.at(-1)!)} ms`,
          result: `${alone.upstreamCalls / Math.max(1, shared.upstreamCalls)} × fewer upstream calls`,
          target: '1 upstream call',
          pass: shared.upstreamCalls === 1,
        });
      }
    } finally {
      await viaSlow.stop();
    }
  } finally {
    await fast.stop();
    await slowFake.close();
  }
  details.push(
    `Cache benchmark (bench/benchmarks/gateway-cache.ts): this gateway (SQLite, the in-memory ring at its default 64 MiB) on a fake answering at once; hits repeat one request, misses carry a counter in the message so that each is new (each is stored, filling the ring); ${SLICE_S} s slices hit, miss, bypass (X-Gateway-No-Cache: the pipeline without cache and dedup), bypass, miss, hit at ${CONNECTIONS} connections after ${WARMUP_S} s of warm-up each. ` +
      `Dedup: ${CONCURRENT} identical requests sent at once to a fake answering after ${UPSTREAM_MS} ms (in the bench process, which counts the upstream calls), then the same ${CONCURRENT} with X-Gateway-No-Cache: true; latency is each client's, from send to the end of the body.`,
  );
  return { rows: rows.map((r) => ({ id: '7', ...r })), details, raw: { cache: raw } };
}
