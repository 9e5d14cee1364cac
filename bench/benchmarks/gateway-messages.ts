import { cpus } from 'node:os';
import { type AbTally, measureSlice, summarize, tally } from '../lib/ab-run.ts';
import { type ChildServer, startServer } from '../lib/children.ts';
import { chatRequest, ID_PLACEHOLDER, messagesRequest, REQUEST_SHAPE } from '../lib/claude-code-request.ts';
import { waitUntilIdle } from '../lib/cpu.ts';
import { call, fmt, log, median, spread } from '../lib/format.ts';
import { DIRECT, FAKE_TEXT, NODE_FLOOR, type RunningTarget, startGateway, type Upstream } from '../lib/gateway-targets.ts';
import { load, percentile } from '../lib/load.ts';
import { rssMiB, rssPeak } from '../lib/memory.ts';
import type { Row, Section } from '../lib/report.ts';
import { streamTtfb } from '../lib/ttfb.ts';

/**
 * `/v1/messages` against `/v1/chat/completions`, both through the gateway to
 * the fake provider's Anthropic side, beside the fake called directly and the
 * Node floor, in the same run (part `messages`; docs/BENCHMARKS.md, its own
 * section). One Claude-Code-shaped turn (bench/lib/claude-code-request.ts),
 * streamed and not. Lanes, each a request shape against a process:
 * the fake's /v1/messages directly; the floor piping it; the gateway serving
 * Messages; a second gateway (same settings) serving the same turn as Chat
 * Completions, as benchmark 5 sends it. Both run every stage (compaction,
 * the response cache and dedup, prompt-cache placement, savings).
 * RUNS runs, each with benchmark 9's two loads (bench/lib/ab-run.ts's slices):
 * 50 connections on a fake answering at once (CPU per call, memory), then 10
 * on one answering after 20 ms, an event every 10 ms (X-Gateway-Overhead-Ms,
 * latency, then streamed time to first byte); each load's processes started
 * afresh, each lane warmed, its slices in order then reversed. Figures are the
 * median over the runs.
 */

const RUNS = 3;
const ROUNDS = 2;
const SLICE_S = 4;
const WARMUP_S = 3;
const THROUGHPUT_CONNECTIONS = 50;
const LATENCY_CONNECTIONS = 10;
const TTFB_REQUESTS = 100;
const TTFB_CONCURRENCY = 4;
/** Messages' CPU per call and overhead p50 against Chat Completions' for the same model: "no worse" within this noise. */
const BOUND = 1.05;

const API_KEY = 'sk-bench-fake';
const MESSAGES_MODEL = 'claude-sonnet-4-5';
const CHAT_MODEL = `anthropic/${MESSAGES_MODEL}`;
const ANTHROPIC_HEADERS = { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14' };

type Mode = 'plain' | 'stream';
type Proc = 'fake' | 'floor' | 'gwMessages' | 'gwChat';
type Kind = 'direct' | 'floor' | 'messages' | 'chat';
const KINDS: readonly Kind[] = ['direct', 'floor', 'messages', 'chat'];
const MODES: readonly Mode[] = ['plain', 'stream'];
const LABEL: Record<Kind, string> = {
  direct: 'fake directly (Messages)',
  floor: 'Node floor (Messages)',
  messages: 'gateway, /v1/messages',
  chat: 'gateway, /v1/chat/completions',
};
const PROC: Record<Kind, Proc> = { direct: 'fake', floor: 'floor', messages: 'gwMessages', chat: 'gwChat' };

interface Lane {
  kind: Kind;
  mode: Mode;
  path: string;
  headers: Record<string, string>;
  /** The body with autocannon's id placeholder in it. */
  body: string;
  proc: Proc;
}

const laneName = (l: { kind: Kind; mode: Mode }) => `${l.kind}/${l.mode}`;

function lanes(procs: Record<Proc, RunningTarget>): Lane[] {
  const out: Lane[] = [];
  for (const mode of MODES) {
    for (const kind of KINDS) {
      const t = procs[PROC[kind]];
      const chat = kind === 'chat';
      const body = JSON.stringify(chat ? chatRequest({ model: CHAT_MODEL, stream: mode === 'stream' }) : messagesRequest({ model: MESSAGES_MODEL, stream: mode === 'stream' }));
      const headers = { ...t.headers, ...(chat ? {} : ANTHROPIC_HEADERS), };
      out.push({ kind, mode, path: chat ? '/chat/completions' : '/messages', headers, body, proc: PROC[kind] });
    }
  }
  return out;
}

/** One load's processes: the fake, the floor in front of it, and two gateways (same settings) for the two surfaces. */
async function startProcs(fakeBehaviour: Record<string, unknown>): Promise<{ fake: ChildServer<{ url: string }>; procs: Record<Proc, RunningTarget> }> {
  const fake = await startServer<{ url: string }>('fake provider', new URL('../servers/fake-provider.ts', import.meta.url), { FAKE_BEHAVIOUR: JSON.stringify(fakeBehaviour) });
  const upstream: Upstream = { url: fake.info.url, pid: fake.pid, apiKey: API_KEY };
  // Only an Anthropic key: routing a named Claude model (on, as in benchmark 5) then chooses among Anthropic's models.
  const env = { BENCH_GATEWAY_PROVIDERS: 'anthropic' };
  const procs = {
    fake: await DIRECT.start(upstream),
    floor: await NODE_FLOOR.start(upstream),
    gwMessages: await startGateway(upstream, 'gateway messages', env),
    gwChat: await startGateway(upstream, 'gateway chat', env),
  };
  return { fake, procs };
}

async function stopProcs(p: { fake: ChildServer<unknown>; procs: Record<Proc, RunningTarget> }) {
  for (const t of Object.values(p.procs)) await t.stop();
  await p.fake.stop();
}

const autocannonOptions = (t: RunningTarget, lane: Lane, connections: number) => ({
  url: `${t.url}${lane.path}`,
  method: 'POST' as const,
  headers: lane.headers,
  body: lane.body,
  idReplacement: true,
  connections,
});

/** Slices of every lane, in order then reversed, ROUNDS times, after WARMUP_S of each. */
async function slices(procs: Record<Proc, RunningTarget>, connections: number): Promise<Map<string, AbTally>> {
  const all = lanes(procs);
  const tallies = new Map(all.map((l) => [laneName(l), tally(laneName(l))]));
  for (const l of all) await load({ ...autocannonOptions(procs[l.proc], l, connections), duration: WARMUP_S });
  for (let round = 0; round < ROUNDS; round++) {
    for (const l of round % 2 === 0 ? all : [...all].reverse()) {
      await measureSlice(tallies.get(laneName(l))!, procs[l.proc].pid, { ...autocannonOptions(procs[l.proc], l, connections), duration: SLICE_S }, false);
    }
  }
  return tallies;
}

interface LaneFigures {
  rate: number;
  cpuUs: number;
  mainUs: number;
  overheadP50: number;
  overheadP99: number;
  p50: number;
  p99: number;
  ttfb50: number;
  ttfb99: number;
  failed: number;
}

interface Memory {
  idle: number;
  peak: number;
  after: number;
  heapMiB: number;
  calls: number;
}

interface Run {
  lanes: Record<string, LaneFigures>;
  memory: Partial<Record<Proc, Memory>>;
  ttfbFailures: Record<string, Record<string, number>>;
}

async function oneRun(): Promise<Run> {
  const figures: Record<string, LaneFigures> = {};
  const memory: Partial<Record<Proc, Memory>> = {};
  const ttfbFailures: Record<string, Record<string, number>> = {};

  // Throughput load: CPU per call and memory.
  const fast = await startProcs({ text: FAKE_TEXT });
  try {
    const measured: Proc[] = ['floor', 'gwMessages', 'gwChat'];
    for (const p of measured) {
      await waitUntilIdle(fast.procs[p].pid);
      memory[p] = { idle: rssMiB(fast.procs[p].pid), peak: 0, after: 0, heapMiB: Number.NaN, calls: 0 };
    }
    const peaks = measured.map((p) => [p, rssPeak(fast.procs[p].pid)] as const);
    const tallies = await slices(fast.procs, THROUGHPUT_CONNECTIONS);
    for (const [p, peak] of peaks) memory[p]!.peak = peak();
    for (const [name, t] of tallies) {
      const s = summarize(t);
      figures[name] = { ...empty(), rate: s.rate, cpuUs: s.cpuUs, mainUs: s.mainUs, failed: t.failed };
    }
    for (const p of measured) {
      const t = fast.procs[p];
      await waitUntilIdle(t.pid);
      memory[p]!.after = rssMiB(t.pid);
      memory[p]!.heapMiB = ((await t.heapAfterGc?.()) ?? Number.NaN) / 2 ** 20;
      memory[p]!.calls = [...tallies.values()].filter((x) => PROC[x.name.split('/')[0] as Kind] === p).reduce((n, x) => n + x.calls, 0);
    }
  } finally {
    await stopProcs(fast);
  }

  // Latency load: X-Gateway-Overhead-Ms, latency, streamed time to first byte.
  const slow = await startProcs({ text: FAKE_TEXT, latencyMs: 20, chunkDelayMs: 10 });
  try {
    const tallies = await slices(slow.procs, LATENCY_CONNECTIONS);
    for (const [name, t] of tallies) {
      const s = summarize(t);
      Object.assign(figures[name]!, { overheadP50: s.overheadP50, overheadP99: s.overheadP99, p50: s.p50, p99: s.p99, failed: figures[name]!.failed + t.failed });
    }
    const streamed = lanes(slow.procs).filter((l) => l.mode === 'stream');
    const ttfb = new Map<string, number[]>(streamed.map((l) => [laneName(l), []]));
    // Two passes, in order then reversed, as the slices; one counter for both, so that no stream repeats an earlier one
    // (the Chat Completions gateway's response cache would answer it).
    let n = 0;
    for (const pass of [streamed, [...streamed].reverse()]) {
      for (const l of pass) {
        const t = slow.procs[l.proc];
        const run = await streamTtfb(t.url, l.headers, () => l.body.replace(ID_PLACEHOLDER, `ttfb-${++n}`), {
          requests: TTFB_REQUESTS / 2,
          concurrency: TTFB_CONCURRENCY,
          path: l.path,
        });
        ttfb.get(laneName(l))!.push(...run.ttfb);
        const failures = ttfbFailures[laneName(l)] ?? {};
        for (const [k, c] of Object.entries(run.failures)) failures[k] = (failures[k] ?? 0) + c;
        if (Object.keys(failures).length) ttfbFailures[laneName(l)] = failures;
      }
    }
    for (const [name, values] of ttfb) {
      const sorted = values.sort((a, b) => a - b);
      Object.assign(figures[name]!, { ttfb50: percentile(sorted, 50), ttfb99: percentile(sorted, 99) });
    }
  } finally {
    await stopProcs(slow);
  }
  return { lanes: figures, memory, ttfbFailures };
}

const empty = (): LaneFigures => ({
  rate: Number.NaN,
  cpuUs: Number.NaN,
  mainUs: Number.NaN,
  overheadP50: Number.NaN,
  overheadP99: Number.NaN,
  p50: Number.NaN,
  p99: Number.NaN,
  ttfb50: Number.NaN,
  ttfb99: Number.NaN,
  failed: 0,
});

/**
 * One request of each lane before any load: each must answer 200 with the text the fake sends, and say (in
 * X-Gateway-Model) which model it reached; a lane that fails stops the part with its answer.
 */
async function check(): Promise<{ models: string[]; sizes: Record<string, number> }> {
  const p = await startProcs({ text: FAKE_TEXT });
  const models: string[] = [];
  const sizes: Record<string, number> = {};
  try {
    for (const l of lanes(p.procs)) {
      const t = p.procs[l.proc];
      const body = l.body.replace(ID_PLACEHOLDER, 'check');
      sizes[`${l.path === '/messages' ? 'messages' : 'chat'}/${l.mode}`] = Buffer.byteLength(body);
      const res = await call(`${t.url}${l.path}`, { method: 'POST', headers: l.headers, body });
      if (res.status !== 200 || !res.body.includes('friend')) throw new Error(`messages: ${LABEL[l.kind]} (${l.mode}) answered ${res.status}: ${res.body.slice(0, 300)}`);
      if (l.kind !== 'direct' && l.kind !== 'floor') {
        const head = await fetch(`${t.url}${l.path}`, { method: 'POST', headers: l.headers, body, signal: AbortSignal.timeout(10_000) });
        await head.arrayBuffer();
        models.push(`${LABEL[l.kind]} (${l.mode}): ${head.headers.get('x-gateway-model')}`);
      }
    }
  } finally {
    await stopProcs(p);
  }
  return { models, sizes };
}

export async function messagesBenchmark(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown>; section: Section }> {
  const started = performance.now();
  const { models, sizes } = await check();
  const runs: Run[] = [];
  for (let i = 0; i < RUNS; i++) {
    log(`messages: run ${i + 1} of ${RUNS}`);
    runs.push(await oneRun());
  }
  const section = report(runs, models, sizes, (performance.now() - started) / 1000);
  return { rows: [], details: [], raw: { messages: { runs, models, sizes } }, section };
}

const ms = (x: number) => (Number.isNaN(x) ? 'n/a' : fmt(x, 2));
const signed = (x: number) => (Number.isNaN(x) ? 'n/a' : `${x >= 0 ? '+' : ''}${fmt(x, 2)}`);

function report(runs: Run[], models: string[], sizes: Record<string, number>, seconds: number): Section {
  const fig = (kind: Kind, mode: Mode, pick: (f: LaneFigures) => number) => median(runs.map((r) => pick(r.lanes[laneName({ kind, mode })]!)));
  const diff = (a: Kind, b: Kind, mode: Mode, pick: (f: LaneFigures) => number) =>
    median(runs.map((r) => pick(r.lanes[laneName({ kind: a, mode })]!) - pick(r.lanes[laneName({ kind: b, mode })]!)));
  const ratios = (a: Kind, b: Kind, mode: Mode, pick: (f: LaneFigures) => number) => runs.map((r) => pick(r.lanes[laneName({ kind: a, mode })]!) / pick(r.lanes[laneName({ kind: b, mode })]!));
  const rows: Row[] = [];
  let n = 0;
  const id = () => `M${++n}`;
  const info = { target: 'none (reported)', pass: true, verdict: 'info' };
  for (const mode of MODES) {
    const how = mode === 'stream' ? 'streamed' : 'not streamed';
    const cpu = (k: Kind) => `${fmt(fig(k, mode, (f) => f.cpuUs))} µs (main thread ${fmt(fig(k, mode, (f) => f.mainUs))})`;
    const cpuRatio = ratios('messages', 'chat', mode, (f) => f.cpuUs);
    rows.push({
      id: id(),
      benchmark: `${how}: gateway CPU per call, Messages against Chat Completions (${THROUGHPUT_CONNECTIONS} connections, 0 ms fake)`,
      measured: `Messages ${cpu('messages')}, ${fmt(median(ratios('messages', 'floor', mode, (f) => f.cpuUs)), 2)} × the floor's`,
      baseline: `Chat Completions ${cpu('chat')}; floor ${cpu('floor')}`,
      result: `${fmt(median(cpuRatio), 3)} × Chat Completions' (runs ${spread(cpuRatio, 3)})`,
      target: `<= ${BOUND} × Chat Completions'`,
      pass: median(cpuRatio) <= BOUND,
    });
    const overhead = (k: Kind) => `p50 ${ms(fig(k, mode, (f) => f.overheadP50))}, p99 ${ms(fig(k, mode, (f) => f.overheadP99))} ms`;
    const p50Ratio = ratios('messages', 'chat', mode, (f) => f.overheadP50);
    rows.push({
      id: id(),
      benchmark: `${how}: X-Gateway-Overhead-Ms, Messages against Chat Completions (${LATENCY_CONNECTIONS} connections, 20 ms fake)`,
      measured: `Messages ${overhead('messages')}`,
      baseline: `Chat Completions ${overhead('chat')}`,
      result: `p50 ${signed(diff('messages', 'chat', mode, (f) => f.overheadP50))} ms (${fmt(median(p50Ratio), 2)} ×, runs ${spread(p50Ratio)}), p99 ${signed(diff('messages', 'chat', mode, (f) => f.overheadP99))} ms`,
      target: `p50 <= ${BOUND} × Chat Completions'`,
      pass: median(p50Ratio) <= BOUND,
    });
    const pick50 = mode === 'stream' ? (f: LaneFigures) => f.ttfb50 : (f: LaneFigures) => f.p50;
    const pick99 = mode === 'stream' ? (f: LaneFigures) => f.ttfb99 : (f: LaneFigures) => f.p99;
    const added = (k: Kind) => `p50 ${signed(diff(k, 'direct', mode, pick50))}, p99 ${signed(diff(k, 'direct', mode, pick99))} ms`;
    rows.push({
      id: id(),
      benchmark:
        mode === 'stream'
          ? `streamed: time to first byte added to the fake's (${TTFB_REQUESTS} streams per lane per run, ${TTFB_CONCURRENCY} at a time)`
          : `not streamed: latency added to the fake's (${LATENCY_CONNECTIONS} connections, 20 ms fake)`,
      measured: `Messages ${added('messages')}`,
      baseline: `direct p50 ${ms(fig('direct', mode, pick50))}, p99 ${ms(fig('direct', mode, pick99))} ms; floor ${added('floor')}`,
      result: `Chat Completions ${added('chat')}`,
      ...info,
    });
  }
  const mem = (p: Proc, pick: (m: Memory) => number) => median(runs.map((r) => pick(r.memory[p]!)));
  const memText = (p: Proc) =>
    `idle ${fmt(mem(p, (m) => m.idle))}, peak ${fmt(mem(p, (m) => m.peak))}, after ${fmt(mem(p, (m) => m.calls) / 1000)}k calls ${fmt(mem(p, (m) => m.after))} MiB`;
  rows.push({
    id: id(),
    benchmark: 'gateway RSS, the process serving each surface (throughput load, both modes)',
    measured: `Messages: ${memText('gwMessages')}; live heap after GC ${fmt(mem('gwMessages', (m) => m.heapMiB), 1)} MiB`,
    baseline: `Chat Completions: ${memText('gwChat')}; live heap after GC ${fmt(mem('gwChat', (m) => m.heapMiB), 1)} MiB; floor: ${memText('floor')}`,
    result: `after the load: ${signed(mem('gwMessages', (m) => m.after) - mem('gwChat', (m) => m.after))} MiB against Chat Completions`,
    ...info,
  });

  const date = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const details = [
    `Measured ${date}, Node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${process.platform}; ${RUNS} runs in ${fmt(seconds)} s (\`npm run bench -- messages\`).`,
    `The request: ${REQUEST_SHAPE}; ${sizes['messages/plain']} bytes as Messages, ${sizes['chat/plain']} as Chat Completions (streamed: ${sizes['messages/stream']} and ${sizes['chat/stream']}). The fake answers "${FAKE_TEXT}" (6 words: 6 deltas).`,
    `Where each gateway lane went (X-Gateway-Model of a check request): ${models.join('; ')}.`,
    ...runs.map((r, i) => {
      const lane = (k: Kind, m: Mode) => {
        const f = r.lanes[laneName({ kind: k, mode: m })]!;
        const stream = m === 'stream' ? `, TTFB p50 ${ms(f.ttfb50)} p99 ${ms(f.ttfb99)}` : '';
        const overhead = Number.isNaN(f.overheadP50) ? '' : `, overhead p50 ${ms(f.overheadP50)} p99 ${ms(f.overheadP99)}`;
        return `${k} ${fmt(f.rate)}/s ${fmt(f.cpuUs)} µs, latency p50 ${ms(f.p50)} p99 ${ms(f.p99)}${overhead}${stream}`;
      };
      return `Run ${i + 1}: ${MODES.map((m) => `${m === 'stream' ? 'streamed' : 'not streamed'}: ${KINDS.map((k) => lane(k, m)).join('; ')}`).join('. ')} (ms).`;
    }),
  ];
  const failures = runs.flatMap((r, i) =>
    Object.entries(r.lanes)
      .filter(([, f]) => f.failed > 0)
      .map(([name, f]) => `run ${i + 1} ${name}: ${f.failed}`)
      .concat(Object.entries(r.ttfbFailures).map(([name, f]) => `run ${i + 1} ${name} streams: ${JSON.stringify(f)}`)),
  );
  details.push(failures.length ? `Answers not 2xx or failed connections: ${failures.join('; ')}.` : 'Every answer was 2xx.');
  return { title: 'Claude Code\'s surface: /v1/messages against /v1/chat/completions', method: METHOD, rows, details };
}

const METHOD = `\`npm run bench -- messages\` (bench/benchmarks/gateway-messages.ts) runs this part alone and prints its table.

- One turn of a coding agent's session as Claude Code sends it (bench/lib/claude-code-request.ts), every request made
  new by an id in its last tool result, so no cache can answer it: to \`/v1/messages\` with \`${MESSAGES_MODEL}\`,
  \`anthropic-version\` and two \`anthropic-beta\` flags; the same conversation to \`/v1/chat/completions\` with
  \`${CHAT_MODEL}\` (system parts, function tools, tool calls and tool messages, the same three \`cache_control\`
  breakpoints). Both reach the same fake (tools/fake-provider's Anthropic side, its own process): Messages passed
  through untouched (surfaces/messages/passthrough.ts), Chat Completions translated by the Anthropic adapter.
- Lanes: the fake called directly with the Messages request; the Node floor (bench/servers/node-floor.ts) piping it;
  the gateway serving Messages; a second gateway process serving Chat Completions. Both run every stage on both
  surfaces (compaction in the tenant's default mode, the response cache and dedup, prompt-cache placement, savings,
  usage records). Both gateways are benchmark 5's
  (bench/servers/gateway-server.ts, every stage on for the tenant, usage records written) with only an Anthropic key,
  at the fake. Each lane streamed and not.
- ${RUNS} runs. Each starts every process afresh for each load, warms each lane ${WARMUP_S} s, then measures ${SLICE_S} s
  slices of every lane in order then reversed (${ROUNDS} slices per lane), each after its process is idle
  (bench/lib/ab-run.ts, as benchmark 9): ${THROUGHPUT_CONNECTIONS} connections on a fake answering at once for CPU per call
  (/proc, all threads and the main thread, over the lane's 2xx answers) and RSS (idle after start, peak over the slices,
  idle after them, and the live heap after a full GC); then ${LATENCY_CONNECTIONS} connections on a fake answering after
  20 ms, then an event every 10 ms, for \`X-Gateway-Overhead-Ms\` (the gateway's own time before its first byte, read
  from every 2xx answer) and latency (to the last byte); then ${TTFB_REQUESTS} streams per streamed lane,
  ${TTFB_CONCURRENCY} at a time, from the send to the first body byte. "Added" is a lane's figure minus the fake's
  own in the same run. Every figure is the median over the runs (ratios and differences taken run by run).
  Target: Messages no worse than Chat Completions to the same model, CPU per call and overhead p50 at most
  ${BOUND} × (this machine's run-to-run noise); p99s and time to first byte are reported.`;

/** `node bench/benchmarks/gateway-messages.ts` runs it alone and prints the figures. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { textTable } = await import('../lib/report.ts');
  const { section } = await messagesBenchmark();
  process.stdout.write(`${textTable(section.rows)}\n\n${section.details.map((d) => `- ${d}`).join('\n')}\n`);
  process.exit(0);
}
