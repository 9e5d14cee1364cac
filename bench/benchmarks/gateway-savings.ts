import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { costUsd } from '../../src/gateway/catalog/cost.ts';
import { type CatalogModel, MODELS } from '../../src/gateway/catalog/models.ts';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { putProviderKey } from '../../src/gateway/control-plane/provider-keys.ts';
import { anthropicAdapter } from '../../src/gateway/providers/anthropic/index.ts';
import type { ChatRequest } from '../../src/gateway/providers/types.ts';
import { createGatewayService, type GatewayService } from '../../src/gateway/service.ts';
import type { TenantSettingsPatch } from '../../src/gateway/control-plane/tenant-settings.ts';
import { signup, updateTenant } from '../../src/gateway/control-plane/tenants.ts';
import { countPromptTokens } from '../../src/gateway/tokens.ts';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';
import { fmt, log } from '../lib/format.ts';
import type { Row } from '../lib/report.ts';
import { floorDetail } from '../lib/savings-report.ts';
import { CLIENTS, type ClientName, type ClientRequest, clientRequest, type Message } from '../lib/savings-clients.ts';
import { directRow, type Replay, replayDetails, shortModel, wayRow } from '../lib/savings-report.ts';
import { type Format, lastBlockMarked, latestExchange, RewriteMeter } from '../lib/upstream-prompts.ts';

/**
 * "How much cheaper is it, for a client that already caches?": the
 * transcript corpus (bench/corpus/README.md; the sample when
 * transcripts.jsonl is absent) replayed turn by turn, each turn a request
 * carrying the conversation so far with its session id, for an Anthropic and
 * an OpenAI model, by two clients (bench/lib/savings-clients.ts: `naive`, no
 * cache hints; `cache-aware`, Anthropic breakpoints or `prompt_cache_key`),
 * each way against its own fake provider with the prompt-cache simulation on
 * (tools/fake-provider):
 * - direct: the client's calls straight to the fake (Anthropic: the
 *   adapter's translation without a plan, which carries the client's
 *   cache_control over);
 * - through the gateway with X-Gateway-Compact `off`, `safe`, `agent`,
 *   `aggressive`, and `aggressive` with the tenant's routing on; for the
 *   Anthropic model's cache-aware client, the same ways again through
 *   `/v1/messages` (Claude Code's surface), sending the direct way's body
 *   with its breakpoints. A way the
 *   gateway refuses (400 on its first call: `agent` before it exists) is
 *   skipped, its reason recorded.
 * What each way cost is what its fake billed (the fake's ledger), priced with
 * the catalog; the measured saving is the same client's direct bill minus
 * it. What the gateway claimed is the usage records' cost_saved_usd (and its
 * saved_* columns, and the X-Gateway-Cost-Saved headers, which must agree).
 * From the bodies the fake received: the tokens the gateway caused to be
 * rewritten and whether the latest exchange arrived intact
 * (bench/lib/upstream-prompts.ts). Sequential calls, no timing: the figures
 * are costs, so a busy machine changes nothing but the run time.
 * BENCH_SAVINGS_SESSIONS=n replays only the first n sessions (a quick run).
 */

interface Session {
  id: string;
  model?: string;
  tools?: unknown[];
  messages: Message[];
}

const CORPUS = new URL('../corpus/transcripts.jsonl', import.meta.url);
const SAMPLE = new URL('../corpus/sample.jsonl', import.meta.url);
const MODELS_UNDER_TEST = ['anthropic/claude-sonnet-4-5', 'openai/gpt-5'];

interface Way {
  name: string;
  /** The gateway's front door: Chat Completions (default), or Anthropic's Messages API with the body Claude Code's client would send directly. */
  surface?: 'messages';
  /** X-Gateway-Compact. */
  compact: string;
  /** The tenant's settings for this way. */
  settings?: TenantSettingsPatch;
  /** The most this way may cost as a multiple of the same client's direct bill, for the cache-aware client (or for both). */
  target?: { ratio: number; clients: readonly ClientName[] };
}
const WAYS: readonly Way[] = [
  { name: 'off', compact: 'off', target: { ratio: 1, clients: CLIENTS } },
  { name: 'safe', compact: 'safe', target: { ratio: 1, clients: CLIENTS } },
  { name: 'agent', compact: 'agent', target: { ratio: 0.5, clients: ['cache-aware'] } },
  // The tenant's knobs turned down for a corpus of short sessions (p90 prompt 22.8k tokens): what agent reaches here.
  {
    name: 'agent, trigger 8000, keep 3, batch 4000',
    compact: 'agent',
    settings: { compaction: { stale_trigger_tokens: 8000, stale_keep_results: 3, stale_batch_tokens: 4000 } },
  },
  { name: 'aggressive', compact: 'aggressive' },
  { name: 'aggressive, routing on', compact: 'aggressive', settings: { routing: { enabled: true } } },
];

/**
 * The same ways through `/v1/messages`, for the Anthropic model and the
 * cache-aware client: the body sent is exactly the direct way's (the
 * client's Messages request, its three breakpoints included), so the
 * direct bill is the baseline as it is for Chat Completions.
 */
const MESSAGES_WAYS: readonly Way[] = WAYS.map((w) => ({ ...w, name: `/v1/messages, ${w.name}`, surface: 'messages' as const }));

function loadCorpus(): { name: string; sessions: Session[] } {
  const url = existsSync(CORPUS) ? CORPUS : SAMPLE;
  const lines = readFileSync(url, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const limit = Number(process.env['BENCH_SAVINGS_SESSIONS'] ?? lines.length);
  return { name: url.pathname.split('/').pop()!, sessions: lines.slice(0, limit > 0 ? limit : lines.length).map((l) => JSON.parse(l) as Session) };
}

/** Each turn: the messages before an assistant message, and the tokens of that answer. */
function* turns(session: Session): Generator<{ messages: Message[]; answerTokens: number }> {
  for (let k = 1; k < session.messages.length; k++) {
    if (session.messages[k]!.role !== 'assistant') continue;
    const messages = session.messages.slice(0, k);
    if (!messages.some((m) => m.role === 'user')) continue;
    yield { messages, answerTokens: Math.max(1, countPromptTokens([session.messages[k]]) - 6) };
  }
}

const entryOf = (model: string): CatalogModel | undefined => MODELS.find((m) => m.id === model && (m.provider === 'openai' || m.provider === 'anthropic'));

/** What the fake billed, priced with the catalog, and its token counts. */
function priceLedger(fake: FakeProvider, out: Replay): void {
  for (const [model, tokens] of fake.ledger.byModel()) {
    const entry = entryOf(model);
    if (!entry) throw new Error(`the fake billed ${model}, which the catalog does not price`);
    out.billedUsd += costUsd(tokens, entry)!;
    out.tokens.sent += tokens.promptTokens;
    out.tokens.read += tokens.cachedTokens;
    out.tokens.written += tokens.cacheWriteTokens;
    out.tokens.uncached += tokens.promptTokens - tokens.cachedTokens - tokens.cacheWriteTokens;
  }
}

async function startGateway(): Promise<{ service: GatewayService; url: string; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-savings-'));
  const config = loadGatewayConfig({
    LOG_LEVEL: 'error',
    DATA_DIR: dataDir,
    GATEWAY_PORT: '0',
    GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
    GATEWAY_LIMIT_SIGNUP: '1000/60',
    GATEWAY_USAGE_FLUSH_MS: '20',
  });
  const service = await createGatewayService(config, { processMetrics: false });
  service.runtime.startWorkers();
  const url = await service.runtime.listen('127.0.0.1', 0);
  return { service, url, dataDir };
}

async function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const anthropic = anthropicAdapter('Anthropic', { anthropicDefaultMaxTokens: 4096 });
const directContext = (id: string, fake: FakeProvider) => ({ model: id, apiKey: 'sk-direct', baseUrl: new URL(`${fake.url}/v1`), requestId: 'direct', created: 0 });

/** The client's request as the provider's format carries it: what the latest exchange upstream must equal. */
function clientBody(format: Format, request: ClientRequest, id: string, fake: FakeProvider): Record<string, unknown> {
  if (format === 'openai') return request as unknown as Record<string, unknown>;
  return JSON.parse(anthropic.chatRequest(request as ChatRequest, directContext(id, fake)).body) as Record<string, unknown>;
}

function emptyReplay(): Replay {
  return {
    calls: 0,
    failed: 0,
    billedUsd: 0,
    tokens: { sent: 0, read: 0, written: 0, uncached: 0 },
    rewrittenTokens: 0,
    exchangeTurns: 0,
    exchangeChanged: 0,
    markedTurns: 0,
    seconds: 0,
  };
}

/** One client's way of sending the corpus for one model, against a fresh fake. */
async function replay(
  sessions: Session[],
  model: string,
  client: ClientName,
  way: { gateway: { service: GatewayService; url: string }; way: Way } | undefined,
): Promise<Replay> {
  const started = performance.now();
  const fake = await createFakeProvider({ behaviour: { promptCache: true }, record: 1 });
  const out = emptyReplay();
  const [provider, id] = [model.slice(0, model.indexOf('/')), model.slice(model.indexOf('/') + 1)];
  const format: Format = provider === 'anthropic' ? 'anthropic' : 'openai';
  const meter = new RewriteMeter(format);
  let tenantId: string | undefined;
  let apiKey: string | undefined;
  try {
    if (way) {
      const { deps } = way.gateway.service;
      const tenant = await signup(deps, { name: 'Savings', email: `savings-${fake.port}@example.com`, ip: '127.0.0.1', adminToken: undefined });
      await putProviderKey(deps, tenant.tenantId, { provider, key: 'sk-savings-fake', baseUrl: `${fake.url}/v1` });
      if (way.way.settings) await updateTenant(deps, tenant.tenantId, { settings: way.way.settings });
      tenantId = tenant.tenantId;
      apiKey = tenant.apiKey;
    }
    corpus: for (const session of sessions) {
      meter.startSession();
      for (const turn of turns(session)) {
        fake.setBehaviour({ completionTokens: turn.answerTokens });
        const request = clientRequest(client, model, session.id, turn.messages, session.tools);
        const before = fake.calls.count;
        let res: Awaited<ReturnType<typeof post>>;
        if (way?.way.surface === 'messages') {
          // What the client would send Anthropic directly, sent to the gateway's Messages API instead.
          const direct = anthropic.chatRequest(request as ChatRequest, directContext(id, fake));
          const headers = { 'x-api-key': apiKey!, 'anthropic-version': '2023-06-01', 'x-gateway-session-id': session.id, 'x-gateway-compact': way.way.compact };
          res = await post(`${way.gateway.url}/v1/messages`, headers, direct.body);
          if (out.calls === 0 && res.status === 400) {
            out.skipped = `the gateway refused X-Gateway-Compact: ${way.way.compact} (${res.text.slice(0, 200)})`;
            break corpus;
          }
          out.headerClaimedUsd = (out.headerClaimedUsd ?? 0) + Number(res.headers.get('x-gateway-cost-saved') ?? 0);
        } else if (way) {
          const headers = { authorization: `Bearer ${apiKey}`, 'x-gateway-session-id': session.id, 'x-gateway-compact': way.way.compact };
          res = await post(`${way.gateway.url}/v1/chat/completions`, headers, JSON.stringify(request));
          if (out.calls === 0 && res.status === 400) {
            out.skipped = `the gateway refused X-Gateway-Compact: ${way.way.compact} (${res.text.slice(0, 200)})`;
            break corpus;
          }
          out.headerClaimedUsd = (out.headerClaimedUsd ?? 0) + Number(res.headers.get('x-gateway-cost-saved') ?? 0);
        } else if (format === 'anthropic') {
          const upstream = anthropic.chatRequest(request as ChatRequest, directContext(id, fake));
          res = await post(`${fake.url}${upstream.path}`, upstream.headers, upstream.body);
        } else {
          res = await post(`${fake.url}/v1/chat/completions`, { authorization: 'Bearer sk-direct' }, JSON.stringify({ ...request, model: id }));
        }
        out.calls++;
        if (res.status !== 200) {
          out.failed++;
          out.firstFailure ??= `${res.status} ${res.text.slice(0, 200)}`;
        }
        // The body the fake received for this turn (none when the gateway answered from its own cache).
        const received = fake.calls.count > before ? fake.calls.last()?.body : undefined;
        if (typeof received !== 'object' || received === null) continue;
        const body = received as Record<string, unknown>;
        out.rewrittenTokens += meter.add(body);
        if (lastBlockMarked(format, body)) out.markedTurns++;
        const expected = latestExchange(format, clientBody(format, request, id, fake));
        if (expected === '') continue;
        out.exchangeTurns++;
        if (latestExchange(format, body) !== expected) out.exchangeChanged++;
      }
    }
    priceLedger(fake, out);
    if (way && tenantId && out.skipped === undefined) out.claims = await readClaims(way.gateway.service, tenantId);
  } finally {
    await fake.close();
  }
  out.seconds = (performance.now() - started) / 1000;
  return out;
}

/**
 * What the usage records claim: cost_saved_usd, and each saved_*_usd column
 * that makes it up (read from the rows as they are, so a column added later
 * shows up); saved_provider_cache_usd (the provider's own caching, outside
 * cost_saved_usd; 0 while the column does not exist) apart.
 */
async function readClaims(service: GatewayService, tenantId: string): Promise<NonNullable<Replay['claims']>> {
  await service.dataPlane.usage.flush();
  const rows = (await service.deps.db.selectFrom('usage_records').selectAll().where('tenant_id', '=', tenantId).execute()) as unknown as Record<string, unknown>[];
  const claims = { costSavedUsd: 0, columns: {} as Record<string, number>, providerCacheUsd: undefined as number | undefined, recordedCostUsd: 0 };
  for (const row of rows) {
    claims.costSavedUsd += Number(row['cost_saved_usd'] ?? 0);
    claims.recordedCostUsd += Number(row['cost_usd'] ?? 0);
    if ('saved_provider_cache_usd' in row) claims.providerCacheUsd = (claims.providerCacheUsd ?? 0) + Number(row['saved_provider_cache_usd'] ?? 0);
    for (const [column, value] of Object.entries(row)) {
      if (!column.startsWith('saved_') || !column.endsWith('_usd') || column === 'saved_provider_cache_usd') continue;
      claims.columns[column] = (claims.columns[column] ?? 0) + Number(value ?? 0);
    }
  }
  return claims;
}

export async function gatewaySavings(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  const started = performance.now();
  const corpus = loadCorpus();
  const turnCount = corpus.sessions.reduce((n, s) => n + [...turns(s)].length, 0);
  log(`savings: ${corpus.sessions.length} sessions, ${turnCount} turns from bench/corpus/${corpus.name}`);
  const gateway = await startGateway();
  const rows: Row[] = [];
  const details: string[] = [
    `savings: corpus bench/corpus/${corpus.name}, ${corpus.sessions.length} sessions, ${turnCount} turns per client, way and model; costs are the fake's bills priced with the catalog; the measured saving is the same client's direct bill minus the way's.`,
    'savings: tokens rewritten = per turn, the tokens of the session\'s previous prompt as the fake received it that this turn\'s prompt no longer shares as a common prefix (OpenAI: its token sequence; Anthropic: the cache\'s blocks, cache_control aside), summed: what an edit in the middle of the history makes the provider write (or send uncached) again. A client that only appends causes none.',
    'savings: a claim is within 5 % when |claimed - measured| <= 5 % of |measured|; when |measured| is under 1 % of the direct bill, it is judged against 1 % of the direct bill instead (said so in the row).',
  ];
  const raw: Record<string, unknown> = {};
  try {
    const naiveDirect: Record<string, Replay> = {};
    for (const model of MODELS_UNDER_TEST) {
      for (const client of CLIENTS) {
        log(`savings: ${model}, ${client} client, direct`);
        const direct = await replay(corpus.sessions, model, client, undefined);
        if (client === 'naive') naiveDirect[model] = direct;
        raw[`${model} ${client} direct`] = direct;
        rows.push(directRow(model, client, direct, naiveDirect[model] ?? direct));
        details.push(...replayDetails(`${shortModel(model)}, ${client} client, direct`, model, client, undefined, direct));
        if (client === 'cache-aware') details.push(floorDetail(`${shortModel(model)}, ${client} client`, model, direct));
        const messages = client === 'cache-aware' && model.startsWith('anthropic/') ? MESSAGES_WAYS : [];
        for (const way of [...WAYS, ...messages]) {
          log(`savings: ${model}, ${client} client, ${way.name}`);
          const gw = await replay(corpus.sessions, model, client, { gateway, way });
          raw[`${model} ${client} ${way.name}`] = gw;
          rows.push(wayRow(model, client, way, direct, gw));
          details.push(...replayDetails(`${shortModel(model)}, ${client} client, ${way.name}`, model, client, direct, gw));
        }
      }
    }
  } finally {
    await gateway.service.close();
    rmSync(gateway.dataDir, { recursive: true, force: true });
  }
  details.push(`savings: the whole replay took ${fmt((performance.now() - started) / 1000)} s.`);
  return { rows, details, raw: { savings: raw } };
}
