import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { createFakeProvider } from '../../tools/fake-provider/server.ts';
import { type AbTally, measureSlice, summarize, tally } from '../lib/ab-run.ts';
import { type ChildServer, startServer } from '../lib/children.ts';
import { waitUntilIdle } from '../lib/cpu.ts';
import { call, fmt, log, median, spread } from '../lib/format.ts';
import { DIRECT, FAKE_TEXT, NODE_FLOOR, type RunningTarget, startGateway, type Upstream } from '../lib/gateway-targets.ts';
import { load } from '../lib/load.ts';
import { rssMiB, rssPeak } from '../lib/memory.ts';
import type { Row, Section } from '../lib/report.ts';

/**
 * `/v1/responses` against `/v1/chat/completions` to the same OpenAI model,
 * and the cost of `previous_response_id` chains (part `responses`; its own
 * section of docs/BENCHMARKS.md). Two measurements, in each of RUNS runs:
 *
 * 1. An agent turn (developer instructions, function tools, a user message, a
 *    function call and its output) as Responses and as Chat Completions, each
 *    on its own gateway process (benchmark 5's, same settings), streamed and
 *    not, beside the fake and the Node floor: CPU per call and memory on a fake
 *    answering at once, X-Gateway-Overhead-Ms on one answering after 20 ms
 *    (bench/lib/ab-run.ts's slices, as the Messages part).
 * 2. Chains of stored turns (CHAIN_TURNS), built first; then the next turn
 *    sent with `previous_response_id` against the same whole input sent inline,
 *    interleaved, on one gateway, at low concurrency on a fake answering at once.
 *
 * Figures are the median over the runs; ratios and differences are taken run by run.
 */

const RUNS = 3;
const ROUNDS = 2;
const SLICE_S = 3;
/** Each lane's warm-up before the throughput load's slices; the latency and chain loads, slower, warm for 1 s (the chains' building warms their gateway too). */
const WARMUP_S = 2;
const SHORT_WARMUP_S = 1;
const THROUGHPUT_CONNECTIONS = 50;
const LATENCY_CONNECTIONS = 10;
const CHAIN_CONNECTIONS = 4;
const CHAIN_TURNS = [10, 100] as const;
/** Responses' CPU per call and overhead p50 against Chat Completions' for the same model: "no worse" within this noise. */
const BOUND = 1.05;

const API_KEY = 'sk-bench-fake';
const MODEL = 'gpt-4o-mini';
/** The gateways' tenant has only an OpenAI key at the fake: the model stays on OpenAI's side. */
const GATEWAY_ENV = { BENCH_GATEWAY_PROVIDERS: 'openai' };
/** Autocannon's placeholder, replaced in every request by a fresh id (idReplacement), so no cache answers one. */
const ID_PLACEHOLDER = '[<id>]';
/** What the gateway adds to a call it sends stateless (routes.ts); the inline baseline asks for it too, so both upstream bodies are equal. */
const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

type Json = Record<string, unknown>;

// The agent turn, written once and sent in both shapes.

const MATERIAL = new URL('../corpus/material/', import.meta.url);
const material = (path: string) => readFileSync(new URL(path, MATERIAL), 'utf8');

const INSTRUCTIONS = [
  'You are a coding agent running in a terminal, in a git repository on the user\'s machine. You read and change files and run commands through the tools below, and you keep going until the task is done.',
  'Keep your messages short: say what you are about to do in one sentence before a group of tool calls, and at the end say what changed and how it was checked.',
  'Read the code around a change before making it, and follow its conventions: naming, imports, error handling, comments. Fix the cause of a problem rather than its symptom, and do not fix unrelated bugs.',
  'Run the project\'s own tests and checks after a change; find out how from its README or package manifest. If a command fails, read its output before trying again.',
  'Never commit, push or delete branches unless the user asks. Never print secrets. Use update_plan for tasks of more than two steps and keep it current.',
  'Working directory: /home/dev/service. Sandbox: workspace-write. Network access: restricted. Approval policy: on-request. Shell: bash.',
].join('\n\n');

interface Tool {
  name: string;
  description: string;
  properties: Json;
  required: string[];
}

const TOOLS: Tool[] = [
  {
    name: 'shell',
    description: 'Runs a command in the workspace and returns its output (stdout and stderr, truncated to 10,000 characters) and exit code. Prefer rg over grep, and read files with sed -n on line ranges.',
    properties: {
      command: { type: 'array', items: { type: 'string' }, description: 'The command and its arguments.' },
      workdir: { type: 'string', description: 'The directory to run it in.' },
      timeout_ms: { type: 'number', description: 'How long it may run.' },
    },
    required: ['command'],
  },
  {
    name: 'apply_patch',
    description: 'Edits files with a patch: each hunk names a file to add, delete or update, and for an update the lines to change with three lines of context before and after.',
    properties: { input: { type: 'string', description: 'The whole patch.' } },
    required: ['input'],
  },
  {
    name: 'update_plan',
    description: 'Replaces the task plan shown to the user: the steps in order, each pending, in progress or completed; at most one in progress.',
    properties: {
      explanation: { type: 'string' },
      plan: {
        type: 'array',
        items: {
          type: 'object',
          properties: { step: { type: 'string' }, status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] } },
          required: ['step', 'status'],
          additionalProperties: false,
        },
      },
    },
    required: ['plan'],
  },
  {
    name: 'view_image',
    description: 'Attaches an image file from the workspace to the conversation, so that its content can be read.',
    properties: { path: { type: 'string', description: 'Path of the image.' } },
    required: ['path'],
  },
];

const schema = (t: Tool) => ({ type: 'object', properties: t.properties, required: t.required, additionalProperties: false });
const RESPONSES_TOOLS = TOOLS.map((t) => ({ type: 'function', name: t.name, description: t.description, strict: false, parameters: schema(t) }));
const CHAT_TOOLS = TOOLS.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, strict: false, parameters: schema(t) } }));

const TASK = 'The rate limiter lets a burst through after a key has been idle for a long time: it refills more tokens than `burst`. Find the bug and fix it, then run the tests.';
const CALL_ID = 'call_bench0001';
const CALL_ARGUMENTS = JSON.stringify({ command: ['sed', '-n', '1,200p', 'src/rate-limiter.ts'], workdir: '/home/dev/service' });
const CALL_OUTPUT = `${material('src/rate-limiter.ts.txt')}\n(exit code 0, run ${ID_PLACEHOLDER})`;

const text = (role: string, content: string) => ({ type: 'message', role, content: [{ type: 'input_text', text: content }] });

/** The agent turn as the Responses API takes it (Codex's shape: instructions as a developer message); `store: false`. */
function responsesTurn(stream: boolean): Json {
  return {
    model: MODEL,
    input: [
      text('developer', INSTRUCTIONS),
      text('user', TASK),
      { type: 'function_call', call_id: CALL_ID, name: 'shell', arguments: CALL_ARGUMENTS },
      { type: 'function_call_output', call_id: CALL_ID, output: CALL_OUTPUT },
    ],
    tools: RESPONSES_TOOLS,
    tool_choice: 'auto',
    parallel_tool_calls: false,
    store: false,
    stream,
  };
}

/** The same turn as Chat Completions takes it. */
function chatTurn(stream: boolean): Json {
  return {
    model: MODEL,
    messages: [
      { role: 'developer', content: INSTRUCTIONS },
      { role: 'user', content: TASK },
      { role: 'assistant', content: null, tool_calls: [{ id: CALL_ID, type: 'function', function: { name: 'shell', arguments: CALL_ARGUMENTS } }] },
      { role: 'tool', tool_call_id: CALL_ID, content: CALL_OUTPUT },
    ],
    tools: CHAT_TOOLS,
    tool_choice: 'auto',
    parallel_tool_calls: false,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  };
}

// Measurement 1: the two surfaces.

type Mode = 'plain' | 'stream';
type Proc = 'fake' | 'floor' | 'gwResponses' | 'gwChat';
type Kind = 'direct' | 'floor' | 'responses' | 'chat';
const KINDS: readonly Kind[] = ['direct', 'floor', 'responses', 'chat'];
const GATEWAY_KINDS: readonly Kind[] = ['responses', 'chat'];
const MODES: readonly Mode[] = ['plain', 'stream'];
const PROC: Record<Kind, Proc> = { direct: 'fake', floor: 'floor', responses: 'gwResponses', chat: 'gwChat' };
const LABEL: Record<Kind, string> = {
  direct: 'fake directly (Responses)',
  floor: 'Node floor (Responses)',
  responses: 'gateway, /v1/responses',
  chat: 'gateway, /v1/chat/completions',
};

/** One load's request shape against one process. */
interface Lane {
  name: string;
  url: string;
  pid: number;
  path: string;
  headers: Record<string, string>;
  /** The body with autocannon's id placeholder in it. */
  body: string;
}

function surfaceLanes(procs: Record<Proc, RunningTarget>, kinds: readonly Kind[]): Lane[] {
  const out: Lane[] = [];
  for (const mode of MODES) {
    for (const kind of kinds) {
      const t = procs[PROC[kind]];
      const chat = kind === 'chat';
      const body = JSON.stringify(chat ? chatTurn(mode === 'stream') : responsesTurn(mode === 'stream'));
      out.push({ name: `${kind}/${mode}`, url: t.url, pid: t.pid, path: chat ? '/chat/completions' : '/responses', headers: t.headers, body });
    }
  }
  return out;
}

async function startFake(behaviour: Json): Promise<{ fake: ChildServer<{ url: string }>; upstream: Upstream }> {
  const fake = await startServer<{ url: string }>('fake provider', new URL('../servers/fake-provider.ts', import.meta.url), { FAKE_BEHAVIOUR: JSON.stringify(behaviour) });
  return { fake, upstream: { url: fake.info.url, pid: fake.pid, apiKey: API_KEY } };
}

/** The fake as a target, the floor in front of it, and two gateways (same settings) for the two surfaces. */
async function startTargets(upstream: Upstream): Promise<Record<Proc, RunningTarget>> {
  return {
    fake: await DIRECT.start(upstream),
    floor: await NODE_FLOOR.start(upstream),
    gwResponses: await startGateway(upstream, 'gateway responses', GATEWAY_ENV),
    gwChat: await startGateway(upstream, 'gateway chat', GATEWAY_ENV),
  };
}

const stopAll = async (targets: RunningTarget[]) => {
  for (const t of targets) await t.stop();
};

const autocannonOptions = (lane: Lane, connections: number) => ({
  url: `${lane.url}${lane.path}`,
  method: 'POST' as const,
  headers: lane.headers,
  body: lane.body,
  idReplacement: true,
  connections,
});

/** Slices of every lane, in order then reversed, ROUNDS times, after `warmupS` of each. */
async function slices(all: Lane[], connections: number, warmupS: number): Promise<Map<string, AbTally>> {
  const tallies = new Map(all.map((l) => [l.name, tally(l.name)]));
  for (const l of all) await load({ ...autocannonOptions(l, connections), duration: warmupS });
  for (let round = 0; round < ROUNDS; round++) {
    for (const l of round % 2 === 0 ? all : [...all].reverse()) {
      await measureSlice(tallies.get(l.name)!, l.pid, { ...autocannonOptions(l, connections), duration: SLICE_S }, false);
    }
  }
  return tallies;
}

// Measurement 2: chains.

/** The first turn of a chain: the instructions, and the task with a nonce (a chain's first answer is nobody's cache hit). */
const FIRST_TURN = (nonce: string) => [text('developer', INSTRUCTIONS), text('user', `${TASK} (session ${nonce})`)];
const LOGS = ['logs/tsc-errors.log', 'logs/npm-install.log', 'logs/pytest-failure.log', 'logs/cargo-errors.log', 'logs/docker-build.log'].map(material);
/** Turn k > 0 of a chain: a user message carrying a command's output, about 1.8 KB on average. */
const laterTurn = (k: number) => [text('user', `Turn ${k + 1}. The last command printed this; what next?\n${LOGS[k % LOGS.length]}`)];
/** The turn measured after a chain of `turns`: one user message, new in every request. */
const nextTurn = (turns: number) => [text('user', `Turn ${turns + 1}: go on (${ID_PLACEHOLDER}).`)];

interface Chain {
  turns: number;
  /** The last stored response's id. */
  lastId: string;
  /** The chain's items as the gateway sends them upstream (store.ts's expansion, ids and statuses left out). */
  items: Json[];
}

/** N stored turns (`store: true`, not streamed), each continuing the last. */
async function buildChain(gw: RunningTarget, turns: number): Promise<Chain> {
  const nonce = randomBytes(6).toString('hex');
  const items: Json[] = [];
  let previous: string | undefined;
  for (let k = 0; k < turns; k++) {
    const input = k === 0 ? FIRST_TURN(nonce) : laterTurn(k);
    const body = { model: MODEL, tools: RESPONSES_TOOLS, input, store: true, ...(previous === undefined ? {} : { previous_response_id: previous }) };
    const res = await call(`${gw.url}/responses`, { method: 'POST', headers: gw.headers, body: JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`responses: turn ${k + 1} of a chain answered ${res.status}: ${res.body.slice(0, 300)}`);
    const response = JSON.parse(res.body) as { id: string; output: Json[] };
    items.push(...input);
    for (const { id: _id, status: _status, ...rest } of response.output) items.push(rest);
    previous = response.id;
  }
  return { turns, lastId: previous!, items };
}

/**
 * The next turn of `chain`, both ways, `store: false` (the chain does not
 * grow): with `previous_response_id`, and with the chain's items inline
 * (no previous id) plus the encrypted-reasoning `include` the gateway adds
 * to an expanded call, in the order the gateway writes its fields, so that
 * both go upstream as the same body.
 */
function chainLanes(gw: RunningTarget, chain: Chain): Lane[] {
  const lane = (how: 'expanded' | 'inline', body: Json): Lane => ({
    name: `chain${chain.turns}/${how}`,
    url: gw.url,
    pid: gw.pid,
    path: '/responses',
    headers: gw.headers,
    body: JSON.stringify(body),
  });
  const next = nextTurn(chain.turns);
  return [
    lane('expanded', { model: MODEL, tools: RESPONSES_TOOLS, input: next, previous_response_id: chain.lastId, store: false }),
    lane('inline', { model: MODEL, tools: RESPONSES_TOOLS, input: [...chain.items, ...next], store: false, include: [ENCRYPTED_REASONING] }),
  ];
}

// Runs.

interface LaneFigures {
  rate: number;
  cpuUs: number;
  mainUs: number;
  overheadP50: number;
  overheadP99: number;
  p50: number;
  p99: number;
  failed: number;
}

interface Memory {
  idle: number;
  peak: number;
  after: number;
  heapMiB: number;
  calls: number;
}

type Measured = 'floor' | 'gwResponses' | 'gwChat';

interface Run {
  /** Surface lanes (`responses/plain`...: CPU from the throughput load, the rest from the latency load) and chain lanes (`chain10/expanded`...). */
  lanes: Record<string, LaneFigures>;
  memory: Partial<Record<Measured, Memory>>;
}

const figuresOf = (t: AbTally): LaneFigures => {
  const s = summarize(t);
  return { rate: s.rate, cpuUs: s.cpuUs, mainUs: s.mainUs, overheadP50: s.overheadP50, overheadP99: s.overheadP99, p50: s.p50, p99: s.p99, failed: t.failed };
};

async function oneRun(): Promise<Run> {
  const figures: Record<string, LaneFigures> = {};
  const memory: Partial<Record<Measured, Memory>> = {};

  // Throughput load: CPU per call and memory, every lane.
  let f = await startFake({ text: FAKE_TEXT });
  let procs = await startTargets(f.upstream);
  try {
    const measured: Measured[] = ['floor', 'gwResponses', 'gwChat'];
    for (const p of measured) {
      await waitUntilIdle(procs[p].pid);
      memory[p] = { idle: rssMiB(procs[p].pid), peak: 0, after: 0, heapMiB: Number.NaN, calls: 0 };
    }
    const peaks = measured.map((p) => [p, rssPeak(procs[p].pid)] as const);
    const tallies = await slices(surfaceLanes(procs, KINDS), THROUGHPUT_CONNECTIONS, WARMUP_S);
    for (const [p, peak] of peaks) memory[p]!.peak = peak();
    for (const [name, t] of tallies) figures[name] = figuresOf(t);
    for (const p of measured) {
      const t = procs[p];
      await waitUntilIdle(t.pid);
      memory[p]!.after = rssMiB(t.pid);
      memory[p]!.heapMiB = ((await t.heapAfterGc?.()) ?? Number.NaN) / 2 ** 20;
      memory[p]!.calls = [...tallies.values()].filter((x) => PROC[x.name.split('/')[0] as Kind] === p).reduce((n, x) => n + x.calls, 0);
    }
  } finally {
    await stopAll(Object.values(procs));
    await f.fake.stop();
  }

  // Latency load: X-Gateway-Overhead-Ms and latency of the gateway lanes.
  f = await startFake({ text: FAKE_TEXT, latencyMs: 20, chunkDelayMs: 10 });
  procs = await startTargets(f.upstream);
  try {
    const tallies = await slices(surfaceLanes(procs, GATEWAY_KINDS), LATENCY_CONNECTIONS, SHORT_WARMUP_S);
    for (const [name, t] of tallies) {
      const s = figuresOf(t);
      Object.assign(figures[name]!, { overheadP50: s.overheadP50, overheadP99: s.overheadP99, p50: s.p50, p99: s.p99, failed: figures[name]!.failed + s.failed });
    }
  } finally {
    await stopAll(Object.values(procs));
    await f.fake.stop();
  }

  // Chains: a fresh gateway, its chains built, then the next turns both ways.
  f = await startFake({ text: FAKE_TEXT });
  const gw = await startGateway(f.upstream, 'gateway responses', GATEWAY_ENV);
  try {
    const lanes: Lane[] = [];
    for (const turns of CHAIN_TURNS) lanes.push(...chainLanes(gw, await buildChain(gw, turns)));
    for (const [name, t] of await slices(lanes, CHAIN_CONNECTIONS, SHORT_WARMUP_S)) figures[name] = figuresOf(t);
  } finally {
    await gw.stop();
    await f.fake.stop();
  }
  return { lanes: figures, memory };
}

/** What the check learnt: where each gateway lane went, and the sizes of what was sent and what went upstream. */
interface Checked {
  models: string[];
  /** Client request bytes per surface lane (`responses/plain`...). */
  sizes: Record<string, number>;
  /** Per chain length: the upstream body of the expanded call (bytes), and the client's bodies both ways. */
  chains: Record<number, { upstream: number; expanded: number; inline: number }>;
}

/**
 * Before any load, against a fake in this process that keeps what it was
 * sent: one request of each lane must answer 200 with the fake's text and
 * say (X-Gateway-Model) which model it reached; for each chain length, the
 * expanded and the inline call must reach the fake as the same body (but
 * for the prompt_cache_key the gateway adds, which each derives from its
 * own session). A lane that fails stops the part with its answer.
 */
async function check(): Promise<Checked> {
  const fake = await createFakeProvider({ behaviour: { text: FAKE_TEXT }, record: 4 });
  const upstream = { url: fake.url, pid: process.pid, apiKey: API_KEY };
  const out: Checked = { models: [], sizes: {}, chains: {} };
  const procs = await startTargets(upstream);
  const answered = async (lane: Lane, what: string) => {
    const body = lane.body.replace(ID_PLACEHOLDER, `check-${randomBytes(4).toString('hex')}`);
    const res = await fetch(`${lane.url}${lane.path}`, { method: 'POST', headers: lane.headers, body, signal: AbortSignal.timeout(10_000) });
    const answer = await res.text();
    if (res.status !== 200 || !answer.includes('friend')) throw new Error(`responses: ${what} answered ${res.status}: ${answer.slice(0, 300)}`);
    return { body, model: res.headers.get('x-gateway-model') };
  };
  try {
    for (const l of surfaceLanes(procs, KINDS)) {
      const [kind, mode] = l.name.split('/') as [Kind, Mode];
      const { body, model } = await answered(l, `${LABEL[kind]} (${mode})`);
      if (kind === 'responses' || kind === 'chat') {
        out.sizes[l.name] = Buffer.byteLength(body);
        out.models.push(`${LABEL[kind]} (${mode}): ${model}`);
      }
    }
    const gw = procs.gwResponses;
    for (const turns of CHAIN_TURNS) {
      const chain = await buildChain(gw, turns);
      const [expanded, inline] = chainLanes(gw, chain) as [Lane, Lane];
      const sent: string[] = [];
      for (const l of [expanded, inline]) {
        await answered(l, `the next turn of a chain of ${turns}, ${l.name.split('/')[1]}`);
        const upstreamBody = { ...(fake.calls.last()?.body as Json) };
        delete upstreamBody['prompt_cache_key'];
        // Each request's own id is in its last message: compare with it put back as the placeholder.
        sent.push(JSON.stringify(upstreamBody).replace(/check-[0-9a-f]{8}/, ID_PLACEHOLDER));
      }
      if (sent[0] !== sent[1]) throw new Error(`responses: a chain of ${turns} expanded is not the inline request upstream (${sent[0]!.length} and ${sent[1]!.length} characters)`);
      out.chains[turns] = { upstream: Buffer.byteLength(sent[0]!), expanded: Buffer.byteLength(expanded.body), inline: Buffer.byteLength(inline.body) };
    }
  } finally {
    await stopAll(Object.values(procs));
    await fake.close();
  }
  return out;
}

export async function responsesBenchmark(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown>; section: Section }> {
  const started = performance.now();
  const checked = await check();
  const runs: Run[] = [];
  for (let i = 0; i < RUNS; i++) {
    log(`responses: run ${i + 1} of ${RUNS}`);
    runs.push(await oneRun());
  }
  const section = report(runs, checked, (performance.now() - started) / 1000);
  return { rows: [], details: [], raw: { responses: { runs, ...checked } }, section };
}

// The report.

const ms = (x: number) => (Number.isNaN(x) ? 'n/a' : fmt(x, 2));
const signed = (x: number, digits = 2) => (Number.isNaN(x) ? 'n/a' : `${x >= 0 ? '+' : ''}${fmt(x, digits)}`);
const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`;

function report(runs: Run[], checked: Checked, seconds: number): Section {
  const fig = (lane: string, pick: (f: LaneFigures) => number) => median(runs.map((r) => pick(r.lanes[lane]!)));
  const each = (a: string, b: string, op: (x: number, y: number) => number, pick: (f: LaneFigures) => number) => runs.map((r) => op(pick(r.lanes[a]!), pick(r.lanes[b]!)));
  const ratios = (a: string, b: string, pick: (f: LaneFigures) => number) => each(a, b, (x, y) => x / y, pick);
  const diffs = (a: string, b: string, pick: (f: LaneFigures) => number) => each(a, b, (x, y) => x - y, pick);
  const rows: Row[] = [];
  let n = 0;
  const id = () => `R${++n}`;
  const info = { target: 'none (reported)', pass: true, verdict: 'info' };
  const cpu = (lane: string) => `${fmt(fig(lane, (f) => f.cpuUs))} µs (main thread ${fmt(fig(lane, (f) => f.mainUs))})`;
  const overhead = (lane: string) => `p50 ${ms(fig(lane, (f) => f.overheadP50))}, p99 ${ms(fig(lane, (f) => f.overheadP99))} ms`;

  for (const mode of MODES) {
    const how = mode === 'stream' ? 'streamed' : 'not streamed';
    const [responses, chat, floor] = [`responses/${mode}`, `chat/${mode}`, `floor/${mode}`];
    const cpuRatio = ratios(responses, chat, (f) => f.cpuUs);
    rows.push({
      id: id(),
      benchmark: `${how}: gateway CPU per call, Responses against Chat Completions (${THROUGHPUT_CONNECTIONS} connections, 0 ms fake)`,
      measured: `Responses ${cpu(responses)}, ${fmt(median(ratios(responses, floor, (f) => f.cpuUs)), 2)} × the floor's`,
      baseline: `Chat Completions ${cpu(chat)}; floor ${cpu(floor)}`,
      result: `${fmt(median(cpuRatio), 3)} × Chat Completions' (runs ${spread(cpuRatio, 3)}); main thread ${fmt(median(ratios(responses, chat, (f) => f.mainUs)), 3)} ×`,
      target: `<= ${BOUND} × Chat Completions'`,
      pass: median(cpuRatio) <= BOUND,
    });
    const p50Ratio = ratios(responses, chat, (f) => f.overheadP50);
    rows.push({
      id: id(),
      benchmark: `${how}: X-Gateway-Overhead-Ms, Responses against Chat Completions (${LATENCY_CONNECTIONS} connections, 20 ms fake)`,
      measured: `Responses ${overhead(responses)}`,
      baseline: `Chat Completions ${overhead(chat)}`,
      result: `p50 ${signed(median(diffs(responses, chat, (f) => f.overheadP50)))} ms (${fmt(median(p50Ratio), 2)} ×, runs ${spread(p50Ratio)}), p99 ${signed(median(diffs(responses, chat, (f) => f.overheadP99)))} ms`,
      target: `p50 <= ${BOUND} × Chat Completions'`,
      pass: median(p50Ratio) <= BOUND,
    });
  }

  const mem = (p: Measured, pick: (m: Memory) => number) => median(runs.map((r) => pick(r.memory[p]!)));
  const memText = (p: Measured) =>
    `idle ${fmt(mem(p, (m) => m.idle))}, peak ${fmt(mem(p, (m) => m.peak))}, after ${fmt(mem(p, (m) => m.calls) / 1000)}k calls ${fmt(mem(p, (m) => m.after))} MiB`;
  rows.push({
    id: id(),
    benchmark: 'gateway RSS, the process serving each surface (throughput load, both modes)',
    measured: `Responses: ${memText('gwResponses')}; live heap after GC ${fmt(mem('gwResponses', (m) => m.heapMiB), 1)} MiB`,
    baseline: `Chat Completions: ${memText('gwChat')}; live heap after GC ${fmt(mem('gwChat', (m) => m.heapMiB), 1)} MiB; floor: ${memText('floor')}`,
    result: `after the load: ${signed(mem('gwResponses', (m) => m.after) - mem('gwChat', (m) => m.after), 0)} MiB against Chat Completions`,
    ...info,
  });

  for (const turns of CHAIN_TURNS) {
    const [expanded, inline] = [`chain${turns}/expanded`, `chain${turns}/inline`];
    const both = (lane: string) => `CPU ${cpu(lane)}; overhead ${overhead(lane)}; latency p50 ${ms(fig(lane, (f) => f.p50))}, p99 ${ms(fig(lane, (f) => f.p99))} ms`;
    const cpuDiff = diffs(expanded, inline, (f) => f.cpuUs);
    const latencyDiff = diffs(expanded, inline, (f) => f.p50);
    const sizes = checked.chains[turns]!;
    rows.push({
      id: id(),
      benchmark: `previous_response_id over ${turns} stored turns against the same input inline (upstream body ${kib(sizes.upstream)}; ${CHAIN_CONNECTIONS} connections, 0 ms fake)`,
      measured: `previous_response_id: ${both(expanded)}`,
      baseline: `inline: ${both(inline)}`,
      result: `expansion per call: CPU ${signed(median(cpuDiff), 0)} µs (runs ${spread(cpuDiff, 0)}), main thread ${signed(median(diffs(expanded, inline, (f) => f.mainUs)), 0)} µs; overhead p50 ${signed(median(diffs(expanded, inline, (f) => f.overheadP50)))}, p99 ${signed(median(diffs(expanded, inline, (f) => f.overheadP99)))} ms; latency p50 ${signed(median(latencyDiff))} ms (runs ${spread(latencyDiff)}), p99 ${signed(median(diffs(expanded, inline, (f) => f.p99)))} ms`,
      ...info,
    });
  }

  const date = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const laneText = (r: Run, name: string) => {
    const f = r.lanes[name]!;
    const latency = Number.isNaN(f.p50) ? '' : `, latency p50 ${ms(f.p50)} p99 ${ms(f.p99)}`;
    const head = Number.isNaN(f.overheadP50) ? '' : `, overhead p50 ${ms(f.overheadP50)} p99 ${ms(f.overheadP99)}`;
    return `${name} ${fmt(f.rate)}/s ${fmt(f.cpuUs)} µs${latency}${head}`;
  };
  const chainText = CHAIN_TURNS.map((t) => {
    const s = checked.chains[t]!;
    return `${t} turns: the client sends ${kib(s.expanded)} with previous_response_id, ${kib(s.inline)} inline; ${kib(s.upstream)} go upstream either way`;
  });
  const details = [
    `Measured ${date}, Node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${process.platform}; ${RUNS} runs in ${fmt(seconds)} s (\`npm run bench -- responses\`).`,
    `The agent turn: ${kib(checked.sizes['responses/plain']!)} as Responses, ${kib(checked.sizes['chat/plain']!)} as Chat Completions. The fake answers "${FAKE_TEXT}" (6 words: 6 deltas).`,
    `Where each gateway lane went (X-Gateway-Model of a check request): ${checked.models.join('; ')}.`,
    `Chains (checked equal upstream but for prompt_cache_key): ${chainText.join('; ')}.`,
    ...runs.map((r, i) => `Run ${i + 1} (ms): ${Object.keys(r.lanes).map((name) => laneText(r, name)).join('; ')}.`),
  ];
  const failures = runs.flatMap((r, i) =>
    Object.entries(r.lanes)
      .filter(([, f]) => f.failed > 0)
      .map(([name, f]) => `run ${i + 1} ${name}: ${f.failed}`),
  );
  details.push(failures.length ? `Answers not 2xx or failed connections: ${failures.join('; ')}.` : 'Every answer was 2xx.');
  return { title: 'The Responses API: /v1/responses against /v1/chat/completions, and previous_response_id chains', method: METHOD, rows, details };
}

const METHOD = `\`npm run bench -- responses\` (bench/benchmarks/gateway-responses.ts) runs this part alone and prints its table.

- One agent turn as Codex sends it (bench/benchmarks/gateway-responses.ts): the instructions as a developer message,
  ${TOOLS.length} function tools with JSON Schemas, the task, a shell function call and its output (a 2 KB source file), every
  request made new by an id in that output, so no cache can answer it. To \`/v1/responses\` with \`${MODEL}\` and
  \`store: false\`, so that nothing is stored during the load and the request goes to OpenAI as it came
  (surfaces/responses/passthrough.ts); the same conversation to \`/v1/chat/completions\` (developer, user, assistant
  tool call, tool message). Both reach the fake (tools/fake-provider, its own process) as OpenAI: Responses at its
  \`/v1/responses\`, Chat Completions at its \`/v1/chat/completions\`.
- Lanes: the fake called directly with the Responses request; the Node floor (bench/servers/node-floor.ts) piping it;
  the gateway serving Responses; a second gateway process serving Chat Completions. Both gateways are benchmark 5's
  (bench/servers/gateway-server.ts: every stage on for the tenant, routing included, usage records written) with only an
  OpenAI key, at the fake. Compaction runs on both surfaces (it finds nothing to remove in this turn).
  Each lane streamed and not.
- ${RUNS} runs. Each starts every process afresh for each load, warms each lane (${WARMUP_S} s at the throughput load,
  ${SHORT_WARMUP_S} s at the others), then measures ${SLICE_S} s
  slices of every lane in order then reversed (${ROUNDS} slices per lane), each after its process is idle
  (bench/lib/ab-run.ts, as benchmark 9): ${THROUGHPUT_CONNECTIONS} connections on a fake answering at once for CPU per call
  (/proc, all threads and the main thread, over the lane's 2xx answers) and RSS (idle after start, peak over the slices,
  idle after them, and the live heap after a full GC); then ${LATENCY_CONNECTIONS} connections on a fake answering after
  20 ms, then an event every 10 ms, for \`X-Gateway-Overhead-Ms\` (read from every 2xx answer) and latency (to the last
  byte), the gateway lanes only. Target: Responses no worse than Chat Completions to the same model, CPU per call and
  overhead p50 at most ${BOUND} × (this machine's run-to-run noise); p99s are reported. Streamed latencies (in the runs'
  figures) differ mostly by the fake's pacing: its Responses stream has more events than its Chat stream, 10 ms apart.
- Chains, in each run on a fresh gateway (same settings) and fake answering at once: chains of ${CHAIN_TURNS.join(' and ')}
  turns are built first, each turn \`store: true\`, not streamed (the first: the instructions and the task; each later
  one a user message carrying a command's output from bench/corpus/material/logs, about 1.8 KB; the tools in every
  request). Then the next turn (one short user message, new in every request), \`store: false\` so the chain does not
  grow, both ways, interleaved as above at ${CHAIN_CONNECTIONS} connections: with \`previous_response_id\` = the chain's
  last id, and with the chain's items inline and no previous id (the baseline). The check before the runs proves that
  both reach the fake as the same body (the inline request asks for \`include: ["${ENCRYPTED_REASONING}"]\` as the
  gateway's expansion does); only the \`prompt_cache_key\` the gateway adds differs. The difference is what
  \`previous_response_id\` costs per call over a client sending the whole input: reading and opening the stored turns
  less parsing the larger body. The gateway's body limit is 32 MiB (GATEWAY_BODY_LIMIT_BYTES); the fake has none.
  \`X-Gateway-Overhead-Ms\` on /v1/responses is timed from the route's start, so it counts the chain's expansion
  (the query, the turns opened) and the request's decoding.`;

/** `node bench/benchmarks/gateway-responses.ts` runs it alone and prints the figures. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { textTable } = await import('../lib/report.ts');
  const { section } = await responsesBenchmark();
  process.stdout.write(`${textTable(section.rows)}\n\n${section.details.map((d) => `- ${d}`).join('\n')}\n`);
  process.exit(0);
}
