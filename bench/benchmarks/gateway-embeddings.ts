import { cpus } from 'node:os';
import type { Options, Request } from 'autocannon';
import { type AbTally, measureSlice, summarize, tally } from '../lib/ab-run.ts';
import { type ChildServer, startServer } from '../lib/children.ts';
import { waitUntilIdle } from '../lib/cpu.ts';
import { fmt, log, median, spread } from '../lib/format.ts';
import { DIRECT, type RunningTarget, startGateway } from '../lib/gateway-targets.ts';
import { load } from '../lib/load.ts';
import { rssMiB, rssPeak } from '../lib/memory.ts';
import type { Row, Section } from '../lib/report.ts';

/**
 * POST /v1/embeddings through the gateway against the fake provider called
 * directly, in the same run (part `embeddings`; its own section). One
 * request shape: 64 texts of about 200 characters, 1536 dimensions
 * (text-embedding-3-small's), base64 (what the OpenAI SDKs ask for). Lanes:
 * the fake directly (every request new); the gateway with 0 % of the inputs
 * in its cache (every input new: all sent upstream, all stored), 50 % (the
 * even places the same 32 texts each time, the odd ones new: one upstream
 * call with 32 inputs, the answer reassembled) and 100 % (the same 64 texts:
 * nothing sent). RUNS runs, each with its processes started afresh, each
 * lane warmed, then its slices in order and reversed; figures are the
 * medians over the runs (bench/lib/ab-run.ts's slices, as the Messages part).
 */

const RUNS = 3;
const ROUNDS = 2;
const SLICE_S = 4;
const WARMUP_S = 2;
const CONNECTIONS = 8;
const INPUTS = 64;
const DIMENSIONS = 1536;
const MODEL = 'openai/text-embedding-3-small';
const FAKE_MODEL = 'text-embedding-3-small';

type Kind = 'direct' | 'cached0' | 'cached50' | 'cached100';
const KINDS: readonly Kind[] = ['direct', 'cached0', 'cached50', 'cached100'];
const LABEL: Record<Kind, string> = { direct: 'fake directly', cached0: 'gateway, 0 % cached', cached50: 'gateway, 50 % cached', cached100: 'gateway, 100 % cached' };
const GATEWAY_KINDS: readonly Kind[] = ['cached0', 'cached50', 'cached100'];

/** About 200 characters of a document chunk, different for each `n`. */
const chunk = (n: string) =>
  `Chunk ${n}: the gateway keeps each input's vector under its tenant, model and text, so that a document embedded again costs nothing. ${n}`.padEnd(200, '.');

/** The inputs of one request of `kind`: `fresh` makes a text never sent before. */
function inputs(kind: Kind, fresh: () => string): string[] {
  return Array.from({ length: INPUTS }, (_, i) => {
    if (kind === 'cached100' || (kind === 'cached50' && i % 2 === 0)) return chunk(`fixed-${i}`);
    return chunk(fresh());
  });
}

function options(kind: Kind, t: RunningTarget, duration: number): Options {
  let n = 0;
  const fresh = () => `${process.pid}-${kind}-${Date.now()}-${++n}`;
  const body = () => JSON.stringify({ model: kind === 'direct' ? FAKE_MODEL : MODEL, input: inputs(kind, fresh), dimensions: DIMENSIONS, encoding_format: 'base64' });
  return {
    url: `${t.url}/embeddings`,
    method: 'POST',
    headers: t.headers,
    connections: CONNECTIONS,
    duration,
    requests: [{ setupRequest: (req: Request) => ({ ...req, body: body() }) }],
  };
}

interface LaneFigures {
  rate: number;
  cpuUs: number;
  mainUs: number;
  p50: number;
  p99: number;
  overheadP50: number;
  overheadP99: number;
  failed: number;
}

interface Memory {
  idle: number;
  peak: number;
  after: number;
  heapMiB: number;
}

interface Run {
  lanes: Record<Kind, LaneFigures>;
  memory: Memory;
}

async function startProcs(): Promise<{ fake: ChildServer<{ url: string }>; direct: RunningTarget; gateway: RunningTarget }> {
  const fake = await startServer<{ url: string }>('fake provider', new URL('../servers/fake-provider.ts', import.meta.url), { FAKE_BEHAVIOUR: '{}' });
  const upstream = { url: fake.info.url, pid: fake.pid, apiKey: 'sk-bench-fake' };
  return { fake, direct: await DIRECT.start(upstream), gateway: await startGateway(upstream, 'gateway embeddings') };
}

/**
 * One request of each lane: 200 with 64 vectors; through the gateway, the cache status the lane is named for
 * (the fixed texts embedded once first). A lane that fails stops the part with its answer.
 */
async function check(p: { direct: RunningTarget; gateway: RunningTarget }): Promise<string[]> {
  const seen: string[] = [];
  let n = 0;
  const fresh = () => `check-${++n}`;
  const send = async (kind: Kind) => {
    const t = kind === 'direct' ? p.direct : p.gateway;
    const res = await fetch(`${t.url}/embeddings`, {
      method: 'POST',
      headers: t.headers,
      body: JSON.stringify({ model: kind === 'direct' ? FAKE_MODEL : MODEL, input: inputs(kind, fresh), dimensions: DIMENSIONS, encoding_format: 'base64' }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    const data = res.status === 200 ? (JSON.parse(text) as { data: { embedding: string }[] }).data : [];
    if (data.length !== INPUTS || Buffer.from(data[0]!.embedding, 'base64').length !== DIMENSIONS * 4) {
      throw new Error(`embeddings: ${LABEL[kind]} answered ${res.status}: ${text.slice(0, 300)}`);
    }
    return res.headers;
  };
  await send('cached100');
  const expected: Record<Kind, string> = { direct: '', cached0: 'miss', cached50: 'partial', cached100: 'hit' };
  for (const kind of KINDS) {
    const h = await send(kind);
    if (kind === 'direct') continue;
    const cache = h.get('x-gateway-cache');
    if (cache !== expected[kind]) throw new Error(`embeddings: ${LABEL[kind]} answered X-Gateway-Cache ${cache}, not ${expected[kind]}`);
    seen.push(`${LABEL[kind]}: X-Gateway-Cache ${cache}, X-Gateway-Inputs-Cached ${h.get('x-gateway-inputs-cached')}, X-Gateway-Model ${h.get('x-gateway-model')}`);
  }
  return seen;
}

async function oneRun(): Promise<{ run: Run; seen: string[] }> {
  const p = await startProcs();
  try {
    const seen = await check(p);
    const target = (kind: Kind) => (kind === 'direct' ? p.direct : p.gateway);
    await waitUntilIdle(p.gateway.pid);
    const memory: Memory = { idle: rssMiB(p.gateway.pid), peak: 0, after: 0, heapMiB: Number.NaN };
    const peak = rssPeak(p.gateway.pid);
    const tallies = new Map<Kind, AbTally>(KINDS.map((k) => [k, tally(k)]));
    for (const kind of KINDS) await load(options(kind, target(kind), WARMUP_S));
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of round % 2 === 0 ? KINDS : [...KINDS].reverse()) {
        // The direct lane's CPU is the fake's: what the provider's own side costs, beside the gateway's.
        const t = target(kind);
        await measureSlice(tallies.get(kind)!, kind === 'direct' ? p.fake.pid : t.pid, options(kind, t, SLICE_S), false);
      }
    }
    memory.peak = peak();
    await waitUntilIdle(p.gateway.pid);
    memory.after = rssMiB(p.gateway.pid);
    memory.heapMiB = ((await p.gateway.heapAfterGc?.()) ?? Number.NaN) / 2 ** 20;
    const lanes = {} as Record<Kind, LaneFigures>;
    for (const [kind, t] of tallies) {
      const s = summarize(t);
      lanes[kind] = { rate: s.rate, cpuUs: s.cpuUs, mainUs: s.mainUs, p50: s.p50, p99: s.p99, overheadP50: s.overheadP50, overheadP99: s.overheadP99, failed: t.failed };
    }
    return { run: { lanes, memory }, seen };
  } finally {
    await p.gateway.stop();
    await p.direct.stop();
    await p.fake.stop();
  }
}

export async function embeddingsBenchmark(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown>; section: Section }> {
  const started = performance.now();
  const runs: Run[] = [];
  let seen: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    log(`embeddings: run ${i + 1} of ${RUNS}`);
    const one = await oneRun();
    runs.push(one.run);
    seen = one.seen;
  }
  const section = report(runs, seen, (performance.now() - started) / 1000);
  return { rows: [], details: [], raw: { embeddings: { runs, seen } }, section };
}

const ms = (x: number) => (Number.isNaN(x) ? 'n/a' : fmt(x, 2));

function report(runs: Run[], seen: string[], seconds: number): Section {
  const fig = (kind: Kind, pick: (f: LaneFigures) => number) => median(runs.map((r) => pick(r.lanes[kind])));
  const ratios = (kind: Kind, pick: (f: LaneFigures) => number) => runs.map((r) => pick(r.lanes[kind]) / pick(r.lanes.direct));
  const info = { target: 'none (reported)', pass: true, verdict: 'info' };
  const rows: Row[] = [];
  let n = 0;
  const id = () => `E${++n}`;
  for (const kind of GATEWAY_KINDS) {
    const p50 = ratios(kind, (f) => f.p50);
    const p99 = ratios(kind, (f) => f.p99);
    rows.push({
      id: id(),
      benchmark: `${LABEL[kind]}: latency against the fake called directly (${INPUTS} inputs, ${CONNECTIONS} connections, 0 ms fake)`,
      measured: `p50 ${ms(fig(kind, (f) => f.p50))}, p99 ${ms(fig(kind, (f) => f.p99))} ms; X-Gateway-Overhead-Ms p50 ${ms(fig(kind, (f) => f.overheadP50))}, p99 ${ms(fig(kind, (f) => f.overheadP99))}`,
      baseline: `direct p50 ${ms(fig('direct', (f) => f.p50))}, p99 ${ms(fig('direct', (f) => f.p99))} ms`,
      result: `p50 ${fmt(median(p50), 2)} × (runs ${spread(p50)}), p99 ${fmt(median(p99), 2)} × (runs ${spread(p99)})`,
      ...info,
    });
  }
  const cpu = (kind: Kind) => `${fmt(fig(kind, (f) => f.cpuUs))} µs (main thread ${fmt(fig(kind, (f) => f.mainUs))})`;
  rows.push({
    id: id(),
    benchmark: `gateway CPU per call (${INPUTS} inputs of ${DIMENSIONS} dimensions, base64)`,
    measured: GATEWAY_KINDS.map((k) => `${LABEL[k].replace('gateway, ', '')}: ${cpu(k)}`).join('; '),
    baseline: `the fake's own, directly: ${cpu('direct')}`,
    result: `100 % cached ${fmt(median(runs.map((r) => r.lanes.cached100.cpuUs / r.lanes.cached0.cpuUs)), 2)} × the CPU of 0 %; 50 % ${fmt(median(runs.map((r) => r.lanes.cached50.cpuUs / r.lanes.cached0.cpuUs)), 2)} ×`,
    ...info,
  });
  rows.push({
    id: id(),
    benchmark: 'throughput, calls per second',
    measured: GATEWAY_KINDS.map((k) => `${LABEL[k].replace('gateway, ', '')} ${fmt(fig(k, (f) => f.rate))}/s`).join(', '),
    baseline: `direct ${fmt(fig('direct', (f) => f.rate))}/s`,
    result: `100 % cached ${fmt(median(ratios('cached100', (f) => f.rate)), 2)} × the direct rate`,
    ...info,
  });
  const mem = (pick: (m: Memory) => number) => median(runs.map((r) => pick(r.memory)));
  rows.push({
    id: id(),
    benchmark: 'gateway RSS over the run (every lane)',
    measured: `idle ${fmt(mem((m) => m.idle))}, peak ${fmt(mem((m) => m.peak))}, after ${fmt(mem((m) => m.after))} MiB`,
    baseline: `live heap after GC at the end ${fmt(mem((m) => m.heapMiB), 1)} MiB`,
    result: `+${fmt(mem((m) => m.after - m.idle))} MiB after the load (the cache's ring, outside the heap, holds the vectors: at most GATEWAY_CACHE_MAX_BYTES)`,
    ...info,
  });
  const date = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const details = [
    `Measured ${date}, Node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${process.platform}; ${RUNS} runs in ${fmt(seconds)} s (\`npm run bench -- embeddings\`).`,
    ...seen,
    ...runs.map(
      (r, i) =>
        `Run ${i + 1}: ${KINDS.map((k) => {
          const f = r.lanes[k];
          return `${k} ${fmt(f.rate)}/s, ${fmt(f.cpuUs)} µs, p50 ${ms(f.p50)} p99 ${ms(f.p99)} ms`;
        }).join('; ')}.`,
    ),
  ];
  const failures = runs.flatMap((r, i) => KINDS.filter((k) => r.lanes[k].failed > 0).map((k) => `run ${i + 1} ${k}: ${r.lanes[k].failed}`));
  details.push(failures.length ? `Answers not 2xx or failed connections: ${failures.join('; ')}.` : 'Every answer was 2xx.');
  return { title: 'Embeddings: the input cache at 0 %, 50 % and 100 %', method: METHOD, rows, details };
}

const METHOD = `\`npm run bench -- embeddings\` (bench/benchmarks/gateway-embeddings.ts) runs this part alone and prints its table.

- One request shape: ${INPUTS} texts of about 200 characters, \`dimensions: ${DIMENSIONS}\`, \`encoding_format: "base64"\` (what the
  OpenAI SDKs send), to \`${MODEL}\` through the gateway and to the fake provider directly (tools/fake-provider, its own
  process, answering at once with deterministic vectors). The gateway is benchmark 5's (bench/servers/gateway-server.ts:
  limits set, so every call is estimated, reserved and settled; the cache on, in process), with an OpenAI key at the fake.
- Lanes: the fake directly; the gateway with 0 % of the inputs cached (every text new: one upstream call with all 64,
  each vector stored), 50 % (the even places the same 32 texts each time, the odd ones new: one upstream call with the
  32 missing, the answer reassembled in order) and 100 % (the same 64 texts: answered from the cache, nothing sent).
  The fixed texts are embedded once before the slices.
- ${RUNS} runs, each with its processes started afresh: each lane warmed ${WARMUP_S} s, then ${SLICE_S} s slices of every lane
  in order then reversed (${ROUNDS} per lane), each after the measured process is idle (bench/lib/ab-run.ts), at
  ${CONNECTIONS} connections: latency of every 2xx answer (to its last byte), \`X-Gateway-Overhead-Ms\`, CPU per call (/proc,
  all threads and the main thread; the direct lane's is the fake's own), and the gateway's RSS (idle before the slices,
  peak during them, idle after, and the live heap after a full GC). Ratios are taken run by run against the direct
  lane, and every figure is the median over the runs.`;

/** `node bench/benchmarks/gateway-embeddings.ts` runs it alone and prints the figures. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { textTable } = await import('../lib/report.ts');
  const { section } = await embeddingsBenchmark();
  process.stdout.write(`${textTable(section.rows)}\n\n${section.details.map((d) => `- ${d}`).join('\n')}\n`);
  process.exit(0);
}
