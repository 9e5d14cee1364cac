import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { costUsd } from '../../src/gateway/catalog/cost.ts';
import { type CatalogModel, MODELS } from '../../src/gateway/catalog/models.ts';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { promptCacheSavedUsd } from '../../src/gateway/prompt-cache/savings.ts';
import { putProviderKey } from '../../src/gateway/provider-keys.ts';
import { anthropicAdapter } from '../../src/gateway/providers/anthropic/index.ts';
import type { ChatRequest } from '../../src/gateway/providers/types.ts';
import { createGatewayService, type GatewayService } from '../../src/gateway/service.ts';
import type { TenantSettingsPatch } from '../../src/gateway/tenant-settings.ts';
import { signup, updateTenant } from '../../src/gateway/tenants.ts';
import { countPromptTokens } from '../../src/gateway/tokens.ts';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';
import { fmt, log, pct } from '../lib/format.ts';
import type { Row } from '../lib/report.ts';

/**
 * "How much cheaper is it?": the transcript corpus (bench/corpus/README.md;
 * the sample when transcripts.jsonl is absent) replayed turn by turn, each
 * turn a request carrying the conversation so far with its session id, for
 * an Anthropic and an OpenAI model, four ways, each against its own fake
 * provider with the prompt-cache simulation on (tools/fake-provider):
 * - direct: the same calls straight to the fake, as a client without the
 *   gateway sends them (Anthropic: the adapter's translation without a plan);
 * - through the gateway with its defaults;
 * - through the gateway with X-Gateway-Compact: aggressive;
 * - the same, with the tenant's routing on for the named model (it may
 *   answer a turn with a cheaper model of the same provider).
 * What each way cost is what its fake billed (the fake's ledger), priced with
 * the catalog; what the gateway claimed is the usage records' saved_* columns
 * (and the X-Gateway-Cost-Saved headers, which must agree). The claim is
 * then reconciled with the measured difference. Sequential calls, no timing:
 * the figures are costs, so a busy machine changes nothing but the run time.
 * BENCH_SAVINGS_SESSIONS=n replays only the first n sessions (a quick run).
 */

interface Session {
  id: string;
  model?: string;
  tools?: unknown[];
  messages: { role: string; content?: unknown; tool_calls?: unknown }[];
}

const CORPUS = new URL('../corpus/transcripts.jsonl', import.meta.url);
const SAMPLE = new URL('../corpus/sample.jsonl', import.meta.url);
const MODELS_UNDER_TEST = ['anthropic/claude-sonnet-4-5', 'openai/gpt-5'];
interface Way {
  name: string;
  headers: Record<string, string>;
  /** The tenant's settings for this way. */
  settings?: TenantSettingsPatch;
}
const WAYS: readonly Way[] = [
  { name: 'gateway, defaults', headers: {} },
  { name: 'gateway, aggressive compaction', headers: { 'x-gateway-compact': 'aggressive' } },
  { name: 'gateway, aggressive compaction and routing', headers: { 'x-gateway-compact': 'aggressive' }, settings: { routing: { enabled: true } } },
];
const SAVED = ['cache', 'compaction', 'routing', 'promptCache'] as const;
type Claimed = Record<(typeof SAVED)[number], number>;

interface Replay {
  calls: number;
  failed: number;
  firstFailure?: string;
  /** What the fake billed, priced with the catalog. */
  billedUsd: number;
  /** What the fake's own automatic caching saved (OpenAI without a key): direct calls get some too. */
  ownCacheUsd: number;
  claimed: Claimed;
  /** Sum of X-Gateway-Cost-Saved. */
  headerClaimedUsd: number;
  /** Sum of the usage records' cost_usd: the gateway's own bill. */
  recordedCostUsd: number;
}

function loadCorpus(): { name: string; sessions: Session[] } {
  const url = existsSync(CORPUS) ? CORPUS : SAMPLE;
  const lines = readFileSync(url, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const limit = Number(process.env['BENCH_SAVINGS_SESSIONS'] ?? lines.length);
  return { name: url.pathname.split('/').pop()!, sessions: lines.slice(0, limit > 0 ? limit : lines.length).map((l) => JSON.parse(l) as Session) };
}

/** Each turn: the messages before an assistant message, and the tokens of that answer. */
function* turns(session: Session): Generator<{ messages: Session['messages']; answerTokens: number }> {
  for (let k = 1; k < session.messages.length; k++) {
    if (session.messages[k]!.role !== 'assistant') continue;
    const messages = session.messages.slice(0, k);
    if (!messages.some((m) => m.role === 'user')) continue;
    yield { messages, answerTokens: Math.max(1, countPromptTokens([session.messages[k]]) - 6) };
  }
}

const entryOf = (model: string): CatalogModel | undefined => MODELS.find((m) => m.id === model && (m.provider === 'openai' || m.provider === 'anthropic'));

function priceLedger(fake: FakeProvider): { billed: number; own: number } {
  let billed = 0;
  let own = 0;
  for (const [model, tokens] of fake.ledger.byModel()) {
    const entry = entryOf(model);
    if (!entry) throw new Error(`the fake billed ${model}, which the catalog does not price`);
    billed += costUsd(tokens, entry)!;
    own += promptCacheSavedUsd(tokens, entry);
  }
  return { billed, own };
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

/** One way of sending the corpus for one model, against a fresh fake. */
async function replay(
  sessions: Session[],
  model: string,
  way: { gateway?: { service: GatewayService; url: string }; headers: Record<string, string>; settings?: TenantSettingsPatch | undefined },
): Promise<Replay> {
  const fake = await createFakeProvider({ behaviour: { promptCache: true }, record: 0 });
  const out: Replay = { calls: 0, failed: 0, billedUsd: 0, ownCacheUsd: 0, claimed: { cache: 0, compaction: 0, routing: 0, promptCache: 0 }, headerClaimedUsd: 0, recordedCostUsd: 0 };
  const [provider, id] = [model.slice(0, model.indexOf('/')), model.slice(model.indexOf('/') + 1)];
  let tenantId: string | undefined;
  let apiKey: string | undefined;
  try {
    if (way.gateway) {
      const { deps } = way.gateway.service;
      const tenant = await signup(deps, { name: 'Savings', email: `savings-${fake.port}@example.com`, ip: '127.0.0.1', adminToken: undefined });
      await putProviderKey(deps, tenant.tenantId, { provider, key: 'sk-savings-fake', baseUrl: `${fake.url}/v1` });
      if (way.settings) await updateTenant(deps, tenant.tenantId, { settings: way.settings });
      tenantId = tenant.tenantId;
      apiKey = tenant.apiKey;
    }
    for (const session of sessions) {
      for (const turn of turns(session)) {
        fake.setBehaviour({ completionTokens: turn.answerTokens });
        const request: ChatRequest = { model, messages: turn.messages, ...(session.tools ? { tools: session.tools } : {}) };
        let res: Awaited<ReturnType<typeof post>>;
        if (way.gateway) {
          res = await post(`${way.gateway.url}/v1/chat/completions`, { authorization: `Bearer ${apiKey}`, 'x-gateway-session-id': session.id, ...way.headers }, JSON.stringify(request));
          out.headerClaimedUsd += Number(res.headers.get('x-gateway-cost-saved') ?? 0);
        } else if (provider === 'anthropic') {
          const ctx = { model: id, apiKey: 'sk-direct', baseUrl: new URL(`${fake.url}/v1`), requestId: 'direct', created: 0 };
          const upstream = anthropic.chatRequest(request, ctx);
          res = await post(`${fake.url}${upstream.path}`, upstream.headers, upstream.body);
        } else {
          res = await post(`${fake.url}/v1/chat/completions`, { authorization: 'Bearer sk-direct' }, JSON.stringify({ ...request, model: id }));
        }
        out.calls++;
        if (res.status !== 200) {
          out.failed++;
          out.firstFailure ??= `${res.status} ${res.text.slice(0, 200)}`;
        }
      }
    }
    const priced = priceLedger(fake);
    out.billedUsd = priced.billed;
    out.ownCacheUsd = priced.own;
    if (way.gateway && tenantId) {
      await way.gateway.service.dataPlane.usage.flush();
      const row = await way.gateway.service.deps.db
        .selectFrom('usage_records')
        .select((eb) => [
          eb.fn.sum<number>('saved_cache_usd').as('cache'),
          eb.fn.sum<number>('saved_compaction_usd').as('compaction'),
          eb.fn.sum<number>('saved_routing_usd').as('routing'),
          eb.fn.sum<number>('saved_prompt_cache_usd').as('promptCache'),
          eb.fn.sum<number>('cost_usd').as('cost'),
        ])
        .where('tenant_id', '=', tenantId)
        .executeTakeFirstOrThrow();
      for (const k of SAVED) out.claimed[k] = Number(row[k] ?? 0);
      out.recordedCostUsd = Number(row.cost ?? 0);
    }
  } finally {
    await fake.close();
  }
  return out;
}

const usd = (x: number) => `$${x.toFixed(4)}`;
const claimedTotal = (c: Claimed) => SAVED.reduce((sum, k) => sum + c[k], 0);

/** The reconciliation of one way against direct, as sentences. */
function reconcile(model: string, wayName: string, direct: Replay, gw: Replay): string[] {
  const measured = direct.billedUsd - gw.billedUsd;
  const claimed = claimedTotal(gw.claimed);
  const shares = SAVED.map((k) => `${k} ${usd(gw.claimed[k])}${claimed !== 0 ? ` (${pct(gw.claimed[k] / claimed)})` : ''}`).join(', ');
  // The claim counts every cache saving against the same prompt uncached; the direct calls got some automatic hits of their own.
  const expected = claimed - direct.ownCacheUsd;
  const residual = measured - expected;
  const lines = [
    `${model}, ${wayName}: paid ${usd(gw.billedUsd)} against ${usd(direct.billedUsd)} direct: ${usd(measured)} less (${pct(measured / direct.billedUsd)}). ` +
      `Claimed by the gateway: ${usd(claimed)} (${shares}); headers summed ${usd(gw.headerClaimedUsd)}.`,
    `${model}, ${wayName}: reconciliation: claimed ${usd(claimed)} - the direct calls' own automatic cache savings ${usd(direct.ownCacheUsd)} = ${usd(expected)}; ` +
      `measured ${usd(measured)}; residual ${usd(residual)} (${measured !== 0 ? pct(Math.abs(residual) / Math.abs(measured)) : 'n/a'} of the measured difference). ` +
      `The gateway recorded ${usd(gw.recordedCostUsd)} of cost; the fake billed ${usd(gw.billedUsd)}.`,
  ];
  if (Math.abs(residual) > 0.01 * Math.max(Math.abs(measured), 1e-9)) {
    lines.push(
      `${model}, ${wayName}: the residual is over 1 %: a stage's claim is not what the provider's bill shows (compaction prices the tokens it removed at the input price, while its edit also moves where the prefix cache hits; a cache hit claims the answer's original cost).`,
    );
  }
  if (gw.failed > 0 || direct.failed > 0) lines.push(`${model}, ${wayName}: ${gw.failed} failed calls through the gateway, ${direct.failed} direct; first: ${gw.firstFailure ?? direct.firstFailure}.`);
  return lines;
}

export async function gatewaySavings(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  const corpus = loadCorpus();
  const turnCount = corpus.sessions.reduce((n, s) => n + [...turns(s)].length, 0);
  log(`savings: ${corpus.sessions.length} sessions, ${turnCount} turns from bench/corpus/${corpus.name}`);
  const gateway = await startGateway();
  const rows: Row[] = [];
  const details: string[] = [`savings: corpus bench/corpus/${corpus.name}, ${corpus.sessions.length} sessions, ${turnCount} turns per way and model; costs are the fake's bills priced with the catalog.`];
  const raw: Record<string, unknown> = {};
  try {
    for (const model of MODELS_UNDER_TEST) {
      log(`savings: ${model}, direct`);
      const direct = await replay(corpus.sessions, model, { headers: {} });
      raw[`${model} direct`] = direct;
      for (const way of WAYS) {
        log(`savings: ${model}, ${way.name}`);
        const gw = await replay(corpus.sessions, model, { gateway, headers: way.headers, settings: way.settings });
        raw[`${model} ${way.name}`] = gw;
        rows.push({
          id: '7',
          benchmark: `savings: ${model}, ${way.name}`,
          measured: usd(gw.billedUsd),
          baseline: `${usd(direct.billedUsd)} direct`,
          result: `${fmt(100 * (1 - gw.billedUsd / direct.billedUsd), 1)} % cheaper`,
          target: 'none (reported)',
          pass: true,
          verdict: gw.failed > 0 ? 'FAILED CALLS' : 'info',
        });
        details.push(...reconcile(model, way.name, direct, gw));
      }
    }
  } finally {
    await gateway.service.close();
    rmSync(gateway.dataDir, { recursive: true, force: true });
  }
  return { rows, details, raw: { savings: raw } };
}
