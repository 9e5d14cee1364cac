import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { putProviderKey } from '../../src/gateway/control-plane/provider-keys.ts';
import { createGatewayService } from '../../src/gateway/service.ts';
import { signup, updateTenant } from '../../src/gateway/control-plane/tenants.ts';
import { announce, closeWhenTold } from './lifecycle.ts';

/**
 * The real gateway for the benchmarks, configured like `npm run
 * start:gateway` (SQLite in a fresh DATA_DIR, the usage writer on), with one
 * tenant made through the domain functions: its sk-gw- key, and an OpenAI
 * key whose base_url is UPSTREAM_URL/v1 (the fake provider, on loopback:
 * GATEWAY_ALLOW_PRIVATE_UPSTREAMS=127.0.0.1). Requests name
 * `openai/gpt-4o-mini`, a catalog model, so that every call is priced.
 * The tenant turns every pipeline stage on (below). One tenant is the
 * whole load, so the per-tenant shares are those docs/operations.md gives
 * a single-tenant deployment: the whole connection pool and cache, and
 * calls in progress up to its peak (the dedup benchmark sends 100 at once).
 * Prints {"url","apiKey","model"} once listening.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
const config = loadGatewayConfig({
  LOG_LEVEL: 'warn',
  GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT: '128',
  GATEWAY_CACHE_TENANT_SHARE_PERCENT: '100',
  GATEWAY_TENANT_CONCURRENCY: '256',
  ...process.env,
  DATA_DIR: dataDir,
  GATEWAY_HOST: '127.0.0.1',
  GATEWAY_PORT: '0',
  GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
  GATEWAY_LIMIT_SIGNUP: '100/60',
});
const service = await createGatewayService(config);
const { deps } = service;
const tenant = await signup(deps, { name: 'Bench', email: 'bench@example.com', ip: '127.0.0.1', adminToken: undefined });
// BENCH_GATEWAY_PROVIDERS (comma-separated, default "openai"): the providers the tenant has a key for, each at the fake.
// The Messages benchmark gives it only "anthropic", so that routing a named Claude model stays with Anthropic's models.
for (const provider of (process.env['BENCH_GATEWAY_PROVIDERS'] ?? 'openai').split(',')) {
  await putProviderKey(deps, tenant.tenantId, { provider, key: 'sk-bench-fake', baseUrl: `${process.env['UPSTREAM_URL']}/v1` });
}
// Every stage at work: safe compaction, routing of the named model, limits high enough never to refuse (so each call is
// estimated, reserved and settled); the response cache and dedup are on by default, and provider prompt caching is on
// for calls with a session id (the target sends one).
// BENCH_GATEWAY_SETTINGS (JSON) replaces these settings: the breakdown benchmark's configurations.
await updateTenant(deps, tenant.tenantId, {
  settings: process.env['BENCH_GATEWAY_SETTINGS']
    ? JSON.parse(process.env['BENCH_GATEWAY_SETTINGS'])
    : {
        compaction: { default: 'safe' },
        routing: { enabled: true },
        limits: { requests_per_minute: 1_000_000, tokens_per_day: 1_000_000_000_000, usd_per_month: 1_000_000 },
      },
});
service.runtime.startWorkers();
await service.runtime.listen(config.host, config.port);
closeWhenTold(async () => {
  await service.close();
  rmSync(dataDir, { recursive: true, force: true });
});
const url = `http://127.0.0.1:${(service.runtime.app.server.address() as AddressInfo).port}`;
announce({ url, apiKey: tenant.apiKey, model: 'openai/gpt-4o-mini' });
// The parent's questions over IPC. "memory": process.memoryUsage() (heap, external, array buffers, RSS), to tell a heap leak from native growth.
process.on('message', (question) => {
  if (question !== 'memory') return;
  (globalThis as { gc?: () => void }).gc?.(); // with --expose-gc (NODE_OPTIONS): what is still referenced, not what awaits collection
  process.send?.(process.memoryUsage());
});
