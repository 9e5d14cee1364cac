import { join } from 'node:path';
import pino from 'pino';
import { buildControlApp } from '../../src/gateway/app.ts';
import { MemoryLedger } from '../../src/gateway/budgets/memory-ledger.ts';
import { seedFromUsage } from '../../src/gateway/budgets/seed.ts';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { UpstreamPools } from '../../src/gateway/data-plane/upstream-pools.ts';
import { insertUsageRecords } from '../../src/gateway/usage/usage-writer.ts';
import type { GatewayDeps } from '../../src/gateway/deps.ts';
import { gatewayMigrations } from '../../src/gateway/migrations.ts';
import type { GatewayTables, UsageRecordRow } from '../../src/gateway/schema.ts';
import { backgroundWork } from '../../src/platform/background.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { closeDatabase, migrateToLatest, openDatabase } from '../../src/platform/db.ts';
import type { App } from '../../src/platform/http.ts';
import { createRateLimiter } from '../../src/platform/limits.ts';
import { openBody } from '../../src/platform/mail.ts';
import { safeConnector } from '../../src/platform/safe-connect.ts';
import { upstreamPolicy } from '../../src/gateway/control-plane/upstream-policy.ts';
import { createMetrics } from '../../src/platform/metrics.ts';
import { freshDatabase } from './database.ts';
import type { DbKind } from './env.ts';

export const ENCRYPTION_KEY = 'a'.repeat(64);
export const ADMIN_TOKEN = 'admin-token-0123456789-abcdefghijklmnopq';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected field by field
  body: any;
  text: string;
}

export interface TestGateway {
  app: App;
  deps: GatewayDeps;
  clock: ManualClock;
  /** Key hashes handed to deps.apiKeyRevoked, in order. */
  revoked: string[];
  /** Tenant ids handed to deps.tenantChanged, in order. */
  providerChanges: string[];
  /** How often deps.mailQueued was called. */
  mailNudges: number;
  request(method: string, path: string, options?: { body?: unknown; token?: string; ip?: string; headers?: Record<string, string>; form?: string }): Promise<Reply>;
  /** Signs up a fresh workspace through the API (its address unconfirmed); returns its ids and secrets. */
  signup(email?: string, name?: string): Promise<{ tenantId: string; apiKey: string; apiKeyId: string; session: string; email: string }>;
  /** Confirms a signed-up workspace's address by the link of its newest confirmation email, as its owner would. */
  confirm(email: string): Promise<void>;
  /** The outbox rows for an address (of one kind, when given), their text bodies opened. */
  mails(to: string, kind?: string): Promise<{ kind: string; subject: string; text: string; status: string }[]>;
  /** Inserts a usage record as the data plane's usage writer does (with the usage rollups). */
  insertUsage(row: Partial<UsageRecordRow> & { request_id: string; tenant_id: string; created_at: number }): Promise<void>;
  close(): Promise<void>;
}

let counter = 0;
export const uniqueEmail = () => `owner${process.pid}.${++counter}@example.com`;

/**
 * The control plane's real app on a fresh database of `kind` (migrated), with
 * a clock the test moves, in-memory limiters, and recorders in place of the
 * data plane's cache invalidation. Requests go through app.inject.
 */
export async function startTestGateway(kind: DbKind, env: Record<string, string> = {}): Promise<TestGateway> {
  const database = await freshDatabase(kind);
  const config = loadGatewayConfig({
    DATA_DIR: database.dataDir,
    GATEWAY_ENCRYPTION_KEY: ENCRYPTION_KEY,
    GATEWAY_BASE_URL: 'http://gateway.test',
    LOG_LEVEL: 'silent',
    GATEWAY_LIMIT_SIGNUP: '1000/3600',
    GATEWAY_LIMIT_MAGIC_LINK: '1000/3600',
    GATEWAY_LIMIT_MAGIC_LINK_PER_EMAIL: '1000/3600',
    GATEWAY_LIMIT_MAGIC_LINK_VERIFY: '1000/300',
    GATEWAY_LIMIT_API_KEY_CREATE: '1000/3600',
    GATEWAY_LIMIT_PROVIDER_KEYS: '1000/3600',
    ...(database.url ? { GATEWAY_DATABASE_URL: database.url } : {}),
    ...env,
  });
  const { db, dialect } = await openDatabase<GatewayTables>({ url: config.databaseUrl, sqlitePath: join(database.dataDir, 'gateway.sqlite') });
  await migrateToLatest(db, gatewayMigrations);
  const clock = new ManualClock(Date.UTC(2026, 2, 1, 12));
  const log = pino({ level: 'silent' });
  const revoked: string[] = [];
  const providerChanges: string[] = [];
  const limiter = (name: keyof GatewayDeps['limiters']) => createRateLimiter(`gw-test:${name}:${Math.random()}`, config.limits[name]);
  const deps: GatewayDeps = {
    db,
    dialect,
    clock,
    config,
    log,
    metrics: createMetrics('gateway', false),
    limiters: {
      signup: limiter('signup'),
      magicLink: limiter('magicLink'),
      magicLinkPerEmail: limiter('magicLinkPerEmail'),
      verify: limiter('verify'),
      apiKeyCreate: limiter('apiKeyCreate'),
      providerKeys: limiter('providerKeys'),
    },
    redis: undefined,
    outbox: { clock, key: config.encryptionKey },
    mailQueued: () => {
      gateway.mailNudges++;
    },
    apiKeyRevoked: async (hash) => {
      revoked.push(hash);
    },
    tenantChanged: async (tenantId) => {
      providerChanges.push(tenantId);
    },
    background: backgroundWork(log),
    budgets: new MemoryLedger(seedFromUsage(db)),
    upstream: new UpstreamPools({
      connectTimeoutMs: 2000,
      connections: 2,
      connector: (_origin, timeout) => safeConnector(upstreamPolicy(config.allowPrivateUpstreams), { connect: { timeout } }),
    }),
  };
  const app = await buildControlApp(deps);

  const gateway: TestGateway = {
    app,
    deps,
    clock,
    revoked,
    providerChanges,
    mailNudges: 0,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers['authorization'] = `Bearer ${options.token}`;
      let payload: string | undefined = options.form;
      if (options.form !== undefined) headers['content-type'] ??= 'application/x-www-form-urlencoded';
      if (options.body !== undefined) {
        payload = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await app.inject({ method: method as 'GET', url: path, headers, payload, remoteAddress: options.ip ?? '198.51.100.7' });
      const text = res.body;
      const body = /json/.test(String(res.headers['content-type'] ?? '')) && text ? JSON.parse(text) : text;
      return { status: res.statusCode, headers: res.headers, body, text };
    },
    async signup(email = uniqueEmail(), name = 'Acme') {
      // Each from its own address, so that suites testing the per-IP bucket are not starved by their own set-up.
      const r = await gateway.request('POST', '/api/v1/signup', { body: { name, email }, ip: `192.0.2.${(++counter % 254) + 1}` });
      if (r.status !== 201) throw new Error(`signup failed: ${r.status} ${r.text}`);
      return { tenantId: r.body.tenant_id, apiKey: r.body.api_key, apiKeyId: r.body.api_key_id, session: r.body.session_token, email };
    },
    async confirm(email) {
      const mail = (await gateway.mails(email, 'email_confirmation')).at(-1);
      if (!mail) throw new Error(`no confirmation email to ${email}`);
      const r = await gateway.request('POST', '/api/v1/auth/confirm-email', { body: { token: tokenFromMail(mail.text) }, ip: '192.0.2.250' });
      if (r.status !== 200) throw new Error(`confirmation failed: ${r.status} ${r.text}`);
    },
    async mails(to, kind) {
      await deps.background.settled();
      let query = db.selectFrom('outbox').selectAll().where('recipient', '=', to);
      if (kind) query = query.where('kind', '=', kind);
      const rows = await query.orderBy('created_at').execute();
      return rows.map((r) => ({ kind: r.kind, subject: r.subject, status: r.status, text: openBody([config.encryptionKey], r.id, 'text', r.text_body) }));
    },
    async insertUsage(row) {
      // As the usage writer inserts them: the usage rollups count the record too.
      await insertUsageRecords(db, [usageRow(row)]);
    },
    async close() {
      await app.close();
      await deps.upstream.close();
      await deps.background.settled();
      await closeDatabase(db);
      await database.drop();
    },
  };
  return gateway;
}

/** The token in a sign-in email's link. */
export function tokenFromMail(text: string): string {
  const link = /https?:\/\/\S+/.exec(text)?.[0];
  const token = link ? new URL(link).searchParams.get('token') : null;
  if (!token) throw new Error(`no token in email: ${text}`);
  return token;
}

/** A whole usage record: an ordinary non-streamed call of `openai/gpt-4o-mini` that saved nothing, with `row`'s fields over it. */
export function usageRow(row: Partial<UsageRecordRow> & { request_id: string; tenant_id: string; created_at: number }): UsageRecordRow {
  return {
    surface: 'chat.completions',
    key_id: 'key-1',
    session_id: null,
    tag: null,
    model_requested: 'gpt-4o-mini',
    model_used: 'openai/gpt-4o-mini',
    provider: 'openai',
    status: 200,
    error_code: null,
    stream: 0,
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
    route_reason: null,
    attempts: null,
    cache_status: 'miss',
    compaction: 'none',
    overhead_ms: 1,
    upstream_ms: 100,
    request_body: null,
    response_body: null,
    usage_flags: null,
    body_storage: null,
    ...row,
  };
}
