import { costUsd } from '../../src/gateway/catalog/cost.ts';
import { type CatalogModel, MODELS } from '../../src/gateway/catalog/models.ts';
import type { UsageRecordRow } from '../../src/gateway/schema.ts';
import { uuidV7 } from '../../src/platform/crypto.ts';

/**
 * The usage records of the console benchmark (bench/benchmarks/console-pages.ts):
 * tenants whose agents ran sessions over the last 30 days, generated in time
 * order (as the usage writer receives them in production, so the rows of
 * all tenants interleave in the table and its indexes), from a seeded
 * random generator: the same shapes every run (the values shift with the
 * time of day a run starts, from which the 30 days count back; request ids
 * are UUIDv7 as the gateway makes them).
 *
 * Shapes, per tenant: API keys used unevenly (the first few carry most
 * calls); tags as team/feature pairs, one session in ten untagged; sessions
 * of 5 to 100 turns a few seconds to a minute apart, most of them in
 * working hours on weekdays, five records in a hundred outside any
 * session; ten catalog models over three providers, some sessions asking
 * for `auto` (routed, with a reason and a routing saving); prompts that
 * grow with the turn, provider prompt-cache reads after the first turn
 * (writes on Anthropic); 20 % response-cache hits, 3 % dedups, 2 %
 * bypasses; a quarter compacted; 3 % errors with the gateway's error codes,
 * the upstream ones with their attempts; one success in 70 after a retry;
 * upstream latency growing with the answer's length, log-normal overhead.
 */

export const DAY_MS = 86_400_000;
export const RANGE_MS = 30 * DAY_MS;

export interface TenantSpec {
  name: string;
  email: string;
  records: number;
  keys: number;
  /** Tags as `${team}/${feature}`: teams × features of them. */
  teams: number;
  features: number;
}

/**
 * BENCH_CONSOLE_SCALE=0.01 seeds a hundredth of every tenant's records (a
 * quick check of the harness; its figures say nothing about the target).
 */
export const SCALE = Math.min(1, Math.max(0.001, Number(process.env['BENCH_CONSOLE_SCALE'] ?? 1) || 1));
const scaled = (n: number) => Math.round(n * SCALE);

/** The tenant the console signs in to, and the others (their rows are what an index must skip). */
export const MAIN_TENANT: TenantSpec = { name: 'Bench main', email: 'console-bench@example.com', records: scaled(1_000_000), keys: 20, teams: 10, features: 5 };
export const OTHER_TENANTS: readonly TenantSpec[] = [
  { name: 'Bench other 1', email: 'console-bench-1@example.com', records: scaled(100_000), keys: 4, teams: 3, features: 3 },
  { name: 'Bench other 2', email: 'console-bench-2@example.com', records: scaled(50_000), keys: 3, teams: 2, features: 3 },
  { name: 'Bench other 3', email: 'console-bench-3@example.com', records: scaled(30_000), keys: 2, teams: 2, features: 2 },
  { name: 'Bench other 4', email: 'console-bench-4@example.com', records: scaled(20_000), keys: 2, teams: 1, features: 2 },
];

const TEAMS = ['search', 'support', 'billing', 'growth', 'platform', 'mobile', 'data', 'docs', 'infra', 'security'];
const FEATURES = ['agent', 'summarize', 'triage', 'code-review', 'extract'];

/** Ten catalog models over three providers, with the share of sessions that name each. */
const MODEL_MIX: readonly [string, number][] = [
  ['anthropic/claude-sonnet-4-5', 30],
  ['openai/gpt-5', 15],
  ['openai/gpt-5-mini', 12],
  ['anthropic/claude-haiku-4-5', 10],
  ['openai/gpt-4o-mini', 10],
  ['openai/gpt-4.1', 6],
  ['openai/o4-mini', 5],
  ['groq/llama-3.3-70b-versatile', 5],
  ['anthropic/claude-opus-4-1', 4],
  ['groq/llama-3.1-8b-instant', 3],
];
/** What `auto` sessions were routed to, by the prompt's tier. */
const ROUTED = ['openai/gpt-5-nano', 'openai/gpt-5-mini', 'anthropic/claude-haiku-4-5', 'anthropic/claude-sonnet-4-5'];
/** Routing's baseline for `auto` (the cheapest top-tier model, docs/gateway-routing.md). */
const AUTO_BASELINE = 'openai/gpt-5';

/** Failed calls: [status, code, reached a provider, attempts made]. */
const ERRORS: readonly [number, string, boolean, number][] = [
  [429, 'upstream_rate_limited', true, 3],
  [502, 'upstream_error', true, 3],
  [503, 'upstream_overloaded', true, 2],
  [504, 'upstream_timeout', true, 2],
  [400, 'upstream_bad_request', true, 1],
  [413, 'request_too_large', false, 0],
  [429, 'rate_limit_exceeded', false, 0],
  [429, 'budget_exceeded', false, 0],
  [400, 'compaction_budget_unreachable', false, 0],
];
const COMPACTIONS = ['whitespace', 'tool-output', 'whitespace,repeats', 'repeats,tool-output', 'drop-turns,whitespace'];

const catalog = new Map<string, CatalogModel>(MODELS.map((m) => [`${m.provider}/${m.id}`, m]));

/** mulberry32: small, fast, seeded. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One value of `items` with probabilities proportional to `weights`. */
function weighted<T>(rnd: () => number, items: readonly T[], weights: readonly number[]): T {
  const total = weights.reduce((a, b) => a + b, 0);
  let x = rnd() * total;
  for (let i = 0; i < items.length; i++) {
    x -= weights[i]!;
    if (x < 0) return items[i]!;
  }
  return items[items.length - 1]!;
}

/** Log-normal with this median and spread (sigma of the underlying normal). */
function logNormal(rnd: () => number, median: number, sigma: number): number {
  const u = Math.max(rnd(), 1e-12);
  const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rnd());
  return median * Math.exp(sigma * normal);
}

/** A start time in [from, to): weekdays' working hours (UTC) three times as busy as the rest, weekends at half. */
function busyTime(rnd: () => number, from: number, to: number): number {
  for (;;) {
    const t = from + rnd() * (to - from);
    const d = new Date(t);
    const hour = d.getUTCHours();
    const weekend = d.getUTCDay() === 0 || d.getUTCDay() === 6;
    const weight = (weekend ? 0.5 : 1) * (hour >= 8 && hour < 18 ? 1 : 1 / 3);
    if (rnd() < weight) return t;
  }
}

interface Session {
  tenant: number;
  id: string | null;
  key: number;
  tag: string | null;
  model: string;
  routed: boolean;
}

/** What a seeded tenant is, once its rows exist: what the benchmark filters on. */
export interface SeededTenant {
  spec: TenantSpec;
  tenantId: string;
  keyIds: string[];
}

/** Records of the main tenant the benchmark names in its URLs (ids, filters, a cursor deep in the log). */
export interface Landmarks {
  /** The tag, model, key and session most used; a session about 25 days old. */
  busiestTag: string;
  rareTag: string;
  busiestModel: string;
  keyId: string;
  recentSession: string;
  oldSession: string;
  /** The newest record, an old failed one with attempts, and the record about 15 days back (for a cursor). */
  newestRequest: string;
  failedRequest: string;
  middle: { requestId: string; createdAt: number };
  /** Records per tenant, in the order seeded. */
  counts: number[];
  /** The first tenant's sums over all its records, for checking what the usage API reports. */
  totals: { requests: number; errors: number; cacheHits: number; dedupHits: number; costUsd: number };
}

/**
 * Every record of `tenants`, oldest first, handed to `sink` one at a time
 * (the usage writer's `record`), with `pause` awaited every `every` records
 * (its `flush`). Returns the landmarks of the first tenant.
 */
export async function generateUsage(
  tenants: readonly SeededTenant[],
  now: number,
  sink: (row: UsageRecordRow) => void,
  pause: () => Promise<void>,
  every = 5_000,
): Promise<Landmarks> {
  const rnd = random(20_261_130);
  const from = now - RANGE_MS;
  // Every record as three numbers (time, session, turn), sorted by time; rows are built one at a time from them.
  const total = tenants.reduce((n, t) => n + t.spec.records, 0);
  const times = new Float64Array(total);
  const sessionOf = new Int32Array(total);
  const turnOf = new Int16Array(total);
  const sessions: Session[] = [];
  let n = 0;
  tenants.forEach((tenant, ti) => {
    const { spec } = tenant;
    const tags = TEAMS.slice(0, spec.teams).flatMap((team) => FEATURES.slice(0, spec.features).map((f) => `${team}/${f}`));
    const tagWeights = tags.map((_, i) => 1 / (i + 1) ** 0.8);
    const keyWeights = tenant.keyIds.map((_, i) => 1 / (i + 1));
    const newSession = (standalone: boolean): number => {
      const routed = rnd() < 0.15;
      sessions.push({
        tenant: ti,
        id: standalone ? null : `sess_${Math.floor(rnd() * 2 ** 48).toString(36)}${sessions.length.toString(36)}`,
        key: weighted(rnd, tenant.keyIds.map((_, i) => i), keyWeights),
        tag: rnd() < 0.1 ? null : weighted(rnd, tags, tagWeights),
        model: routed ? 'auto' : weighted(rnd, MODEL_MIX.map(([m]) => m), MODEL_MIX.map(([, w]) => w)),
        routed,
      });
      return sessions.length - 1;
    };
    let left = spec.records;
    const standalone = Math.round(spec.records * 0.05);
    for (let i = 0; i < standalone; i++) {
      times[n] = busyTime(rnd, from, now);
      sessionOf[n] = newSession(true);
      turnOf[n++] = 0;
    }
    left -= standalone;
    while (left > 0) {
      let turns = 5 + Math.floor(rnd() * 96);
      if (left - turns < 5) turns = left;
      const s = newSession(false);
      const gapMs = 3_000 + rnd() * 57_000;
      let at = busyTime(rnd, from, now - turns * gapMs * 1.5);
      for (let turn = 0; turn < turns; turn++) {
        times[n] = at;
        sessionOf[n] = s;
        turnOf[n++] = turn;
        at += gapMs * (0.5 + rnd());
      }
      left -= turns;
    }
  });
  const order = new Uint32Array(total).map((_, i) => i).sort((a, b) => times[a]! - times[b]!);

  const main = tenants[0]!;
  const landmarks: Landmarks = {
    busiestTag: '',
    rareTag: '',
    busiestModel: '',
    keyId: main.keyIds[3] ?? main.keyIds[0]!,
    recentSession: '',
    oldSession: '',
    newestRequest: '',
    failedRequest: '',
    middle: { requestId: '', createdAt: 0 },
    counts: tenants.map((t) => t.spec.records),
    totals: { requests: 0, errors: 0, cacheHits: 0, dedupHits: 0, costUsd: 0 },
  };
  const tagCounts = new Map<string, number>();
  const modelCounts = new Map<string, number>();
  const middleAt = now - 15 * DAY_MS;
  const oldAt = now - 25 * DAY_MS;
  const lastTurn = new Map<number, number>();
  for (let i = 0; i < total; i++) {
    const r = order[i]!;
    const session = sessions[sessionOf[r]!]!;
    const createdAt = Math.floor(times[r]!);
    const row = usageRow(rnd, tenants[session.tenant]!, session, turnOf[r]!, createdAt);
    if (session.tenant === 0) {
      const t = landmarks.totals;
      t.requests++;
      if (row.status >= 400) t.errors++;
      if (row.cache_status === 'hit') t.cacheHits++;
      if (row.cache_status === 'dedup') t.dedupHits++;
      t.costUsd += row.cost_usd;
      if (row.tag) tagCounts.set(row.tag, (tagCounts.get(row.tag) ?? 0) + 1);
      const model = row.model_used ?? row.model_requested;
      modelCounts.set(model, (modelCounts.get(model) ?? 0) + 1);
      landmarks.newestRequest = row.request_id;
      if (createdAt <= middleAt) landmarks.middle = { requestId: row.request_id, createdAt };
      if (row.attempts !== null && row.status >= 400 && createdAt <= oldAt) landmarks.failedRequest = row.request_id;
      if (session.id !== null) {
        if (createdAt <= oldAt) landmarks.oldSession = session.id;
        lastTurn.set(sessionOf[r]!, createdAt);
      }
    }
    sink(row);
    if ((i + 1) % every === 0) await pause();
  }
  await pause();
  // The most recent session to end: what a person opening the log after a run would look for.
  let latest = -1;
  for (const [s, at] of lastTurn) if (latest < 0 || at > lastTurn.get(latest)!) latest = s;
  landmarks.recentSession = sessions[latest]?.id ?? '';
  const byCount = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  landmarks.busiestTag = byCount(tagCounts)[0]?.[0] ?? '';
  landmarks.rareTag = byCount(tagCounts).at(-1)?.[0] ?? '';
  landmarks.busiestModel = byCount(modelCounts)[0]?.[0] ?? '';
  return landmarks;
}

function usageRow(rnd: () => number, tenant: SeededTenant, session: Session, turn: number, createdAt: number): UsageRecordRow {
  const tier = Math.min(3, Math.floor(rnd() * 4));
  const modelUsed = session.routed ? ROUTED[tier]! : session.model;
  const entry = catalog.get(modelUsed);
  const provider = modelUsed.slice(0, modelUsed.indexOf('/'));
  const row: UsageRecordRow = {
    surface: 'chat.completions',
    request_id: uuidV7(createdAt),
    tenant_id: tenant.tenantId,
    key_id: tenant.keyIds[session.key]!,
    session_id: session.id,
    tag: session.tag,
    model_requested: session.model,
    model_used: modelUsed,
    provider,
    status: 200,
    error_code: null,
    stream: rnd() < 0.6 ? 1 : 0,
    prompt_tokens: 0,
    cached_tokens: 0,
    cache_write_tokens: 0,
    completion_tokens: 0,
    reasoning_tokens: 0,
    saved_tokens: 0,
    cost_usd: 0,
    cost_saved_usd: 0,
    saved_cache_usd: 0,
    saved_compaction_usd: 0,
    saved_routing_usd: 0,
    saved_prompt_cache_usd: 0,
    saved_provider_cache_usd: 0,
    compaction_saved_tokens: 0,
    route_reason: session.routed ? `tier=${Math.max(1, tier)}; cheapest fit ${modelUsed}` : null,
    attempts: null,
    cache_status: 'miss',
    compaction: 'none',
    overhead_ms: round2(logNormal(rnd, 1.2, 0.5)),
    upstream_ms: 0,
    created_at: createdAt,
    request_body: null,
    response_body: null,
    usage_flags: null,
    body_storage: null,
  };
  const failure = rnd() < 0.03 ? ERRORS[Math.floor(rnd() * ERRORS.length)]! : undefined;
  if (failure) {
    const [status, code, reached, attempts] = failure;
    row.status = status;
    row.error_code = code;
    if (!reached) {
      row.model_used = null;
      row.provider = null;
      row.route_reason = null;
      return row;
    }
    const tries = Array.from({ length: attempts }, () => ({ model: modelUsed, status: status === 504 ? 504 : status, errorCode: code, ms: round2(logNormal(rnd, 900, 0.6)) }));
    row.attempts = tries.length > 1 ? JSON.stringify(tries) : null;
    row.upstream_ms = round2(tries.reduce((a, t) => a + t.ms, 0));
    return row;
  }

  const prompt = Math.min(150_000, Math.round((1_500 + turn * 1_400) * (0.7 + rnd() * 0.6)));
  const completion = Math.min(8_000, Math.round(logNormal(rnd, 320, 0.8)));
  row.prompt_tokens = prompt;
  row.completion_tokens = completion;
  row.reasoning_tokens = /gpt-5|o4-mini/.test(modelUsed) ? Math.round(completion * 0.3) : 0;
  // Provider prompt caching: after the first turn, most of the prompt is the previous turn's.
  if (turn > 0 && provider !== 'groq') {
    row.cached_tokens = Math.round(prompt * (0.6 + rnd() * 0.3));
    if (provider === 'anthropic') row.cache_write_tokens = Math.min(prompt - row.cached_tokens, 1_400);
  }
  if (rnd() < 0.25) {
    row.compaction = COMPACTIONS[Math.floor(rnd() * COMPACTIONS.length)]!;
    row.compaction_saved_tokens = Math.round(prompt * (0.03 + rnd() * 0.3));
  }
  const usage = {
    promptTokens: row.prompt_tokens,
    cachedTokens: row.cached_tokens,
    cacheWriteTokens: row.cache_write_tokens,
    completionTokens: row.completion_tokens,
    reasoningTokens: row.reasoning_tokens,
  };
  const cost = costUsd(usage, entry) ?? 0;
  row.saved_compaction_usd = (row.compaction_saved_tokens * (entry?.input ?? 0)) / 1e6;
  if (entry) {
    const writePremium = row.cache_write_tokens * ((entry.cacheWrite ?? entry.input) - entry.input);
    row.saved_prompt_cache_usd = (row.cached_tokens * (entry.input - entry.cachedInput) - writePremium) / 1e6;
  }
  if (session.routed) row.saved_routing_usd = Math.max(0, (costUsd(usage, catalog.get(AUTO_BASELINE)) ?? 0) - cost);
  const cacheRoll = rnd();
  row.cache_status = cacheRoll < 0.2 ? 'hit' : cacheRoll < 0.23 ? 'dedup' : cacheRoll < 0.25 ? 'bypass' : 'miss';
  if (row.cache_status === 'hit' || row.cache_status === 'dedup') {
    // The whole answer reused: nothing paid, its cost saved.
    row.saved_cache_usd = cost;
    row.saved_compaction_usd = 0;
    row.saved_routing_usd = 0;
    row.saved_prompt_cache_usd = 0;
    row.saved_tokens = prompt + completion;
    row.upstream_ms = row.cache_status === 'dedup' ? round2(logNormal(rnd, 600, 0.7)) : 0;
  } else {
    row.cost_usd = cost;
    row.saved_tokens = row.compaction_saved_tokens;
    row.upstream_ms = round2(logNormal(rnd, 350, 0.4) + completion * (provider === 'groq' ? 0.4 : 12) * (0.7 + rnd() * 0.6));
    if (rnd() < 1 / 70) {
      const first = { model: modelUsed, status: 502, errorCode: 'upstream_error', ms: round2(logNormal(rnd, 800, 0.6)) };
      row.attempts = JSON.stringify([first, { model: modelUsed, status: 200, ms: row.upstream_ms }]);
      row.upstream_ms = round2(row.upstream_ms + first.ms);
    }
  }
  row.cost_saved_usd = row.saved_cache_usd + row.saved_compaction_usd + row.saved_routing_usd + row.saved_prompt_cache_usd;
  return row;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
