import { Writable } from 'node:stream';
import OpenAI from 'openai';
import pino from 'pino';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import type { UsageRecordRow } from '../../src/gateway/schema.ts';
import { createGatewayService, type GatewayService } from '../../src/gateway/service.ts';
import type { RuntimeOverrides } from '../../src/platform/runtime.ts';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';
import { freshDatabase, type TestDatabase } from './database.ts';
import type { DbKind } from './env.ts';

/**
 * The whole gateway as it runs in production (the platform runtime, its
 * database migrated, the data plane with its pools and usage writer), on a
 * real port, in front of the fake provider, whose loopback address is
 * allowed as a private upstream. Everything the service logs is kept in
 * `logs` so a test can check that no secret is ever written.
 */
export interface LiveGateway {
  url: string;
  service: GatewayService;
  fake: FakeProvider;
  db: TestDatabase;
  logs: string[];
  /** Other replicas on this gateway's database (startReplica); close() closes them first. */
  replicas: GatewayService[];
  /** Signs up a tenant through the control plane and stores provider keys pointing at the fake. */
  tenant(options?: { providers?: string[] }): Promise<LiveTenant>;
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected field by field
  api(path: string, init?: { method?: string; token?: string; body?: unknown }): Promise<{ status: number; body: any; headers: Headers }>;
  /** Closes the replicas, this service and the fake, then drops the database (a replica still writing to it would deadlock the drop). */
  close(): Promise<void>;
}

export interface LiveTenant {
  tenantId: string;
  apiKey: string;
  apiKeyId: string;
  session: string;
  /** The provider keys stored for it, by provider (fake.setBehaviourFor({apiKey}) makes only this tenant's upstream behave differently). */
  providerKeys: Record<string, string>;
  /** The official OpenAI SDK pointed at the gateway, no retries. */
  openai: OpenAI;
}

let counter = 0;

/** `overrides.clock`: a ManualClock the test moves (windows, TTLs); the logger is always the helper's own. */
export async function startLiveGateway(kind: DbKind, env: Record<string, string> = {}, overrides: Omit<RuntimeOverrides, 'logger'> = {}): Promise<LiveGateway> {
  const fake = await createFakeProvider();
  const db = await freshDatabase(kind);
  const config = loadGatewayConfig({
    DATA_DIR: db.dataDir,
    GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64),
    GATEWAY_PORT: '0',
    GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
    GATEWAY_USAGE_FLUSH_MS: '20',
    GATEWAY_LIMIT_SIGNUP: '1000/60',
    // Suites send the same request again and again, expecting a new upstream call (faults, retries, counts) each
    // time; the cache is off here unless a suite turns it on (the cache's own suites do: GATEWAY_CACHE_ENABLED=true).
    GATEWAY_CACHE_ENABLED: 'false',
    ...(db.url ? { GATEWAY_DATABASE_URL: db.url } : {}),
    ...env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = pino({ level: 'debug', name: 'gateway' }, sink);
  const service = await createGatewayService(config, { ...overrides, logger, processMetrics: false });
  service.runtime.startWorkers();
  const url = await service.runtime.listen('127.0.0.1', 0);

  const api: LiveGateway['api'] = async (path, init = {}) => {
    const res = await fetch(`${url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  const gateway: LiveGateway = {
    url,
    service,
    fake,
    db,
    logs,
    replicas: [],
    api,
    async tenant(options = {}) {
      const n = ++counter;
      const email = `live${process.pid}.${n}@example.com`;
      const signup = await api('/api/v1/signup', { body: { name: 'Live', email } });
      if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${JSON.stringify(signup.body)}`);
      const session = signup.body.session_token as string;
      const providerKeys: Record<string, string> = {};
      for (const provider of options.providers ?? ['openai', 'anthropic']) {
        providerKeys[provider] = `${provider}-secret-key-${n}-XYZW`;
        const stored = await api('/api/v1/tenant/provider-keys', {
          token: session,
          body: { provider, key: providerKeys[provider], base_url: `${fake.url}/v1` },
        });
        if (stored.status !== 201) throw new Error(`provider key: ${stored.status} ${JSON.stringify(stored.body)}`);
      }
      return {
        tenantId: signup.body.tenant_id,
        apiKey: signup.body.api_key,
        apiKeyId: signup.body.api_key_id,
        session,
        providerKeys,
        openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: signup.body.api_key, maxRetries: 0 }),
      };
    },
    async close() {
      for (const replica of gateway.replicas.splice(0).reverse()) await replica.close();
      await service.close();
      await fake.close();
      await db.drop();
    },
  };
  return gateway;
}

/** The usage record of `requestId`, once the batched writer has written it. */
export async function usageRecord(gw: LiveGateway, requestId: string): Promise<UsageRecordRow> {
  for (let i = 0; i < 100; i++) {
    await gw.service.dataPlane.usage.flush();
    const row = await gw.service.deps.db.selectFrom('usage_records').selectAll().where('request_id', '=', requestId).executeTakeFirst();
    if (row) return row;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no usage record for ${requestId}`);
}

/**
 * Another replica of `a`'s gateway: the same database (and whatever `env`
 * adds, such as REDIS_URL), its own process state, listening on a port of
 * its own. Without `a.db.url` (SQLite) it opens the same file: a restart.
 * `a.close()` closes it, before dropping the database.
 */
export async function startReplica(
  a: LiveGateway,
  env: Record<string, string> = {},
  overrides: Omit<RuntimeOverrides, 'logger'> = {},
): Promise<{ service: GatewayService; url: string }> {
  const service = await createGatewayService(
    loadGatewayConfig({
      DATA_DIR: a.db.dataDir,
      GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64),
      GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
      ...(a.db.url ? { GATEWAY_DATABASE_URL: a.db.url } : {}),
      ...env,
    }),
    { ...overrides, logger: pino({ level: 'silent' }), processMetrics: false },
  );
  a.replicas.push(service);
  return { service, url: await service.runtime.listen('127.0.0.1', 0) };
}
