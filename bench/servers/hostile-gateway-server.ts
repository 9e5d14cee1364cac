import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { putProviderKey } from '../../src/gateway/control-plane/provider-keys.ts';
import { createGatewayService } from '../../src/gateway/service.ts';
import { signup, updateTenant } from '../../src/gateway/control-plane/tenants.ts';
import { HOSTILE_LIMITS, type HostileTenant } from '../../tools/hostile-inputs.ts';
import { announce, closeWhenTold } from './lifecycle.ts';
import { stallMeter } from './stall-meter.ts';

/**
 * The gateway of the hostile-input benchmark (bench/benchmarks/gateway-hostile.ts),
 * configured like `npm run start:gateway` (SQLite in a fresh DATA_DIR, the
 * usage writer on, GATEWAY_BODY_LIMIT_BYTES as the parent sets it), with
 * the tenants of tools/hostile-inputs.ts made through the domain functions:
 * `full` (OpenAI and Anthropic keys whose base_url is UPSTREAM_URL/v1, the
 * fake provider), `budgeted` (the same, with limits that never refuse) and
 * `keyless`. "stalls" over IPC: what held up its event loop since the last
 * "stalls" (stall-meter.ts). Prints {"url","keys"} once listening.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'gateway-hostile-'));
const config = loadGatewayConfig({
  LOG_LEVEL: 'warn',
  ...process.env,
  DATA_DIR: dataDir,
  GATEWAY_HOST: '127.0.0.1',
  GATEWAY_PORT: '0',
  GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
  GATEWAY_LIMIT_SIGNUP: '100/60',
});
const service = await createGatewayService(config);
const { deps } = service;
const keys = {} as Record<HostileTenant, string>;
for (const name of ['full', 'budgeted', 'keyless'] as const) {
  const tenant = await signup(deps, { name, email: `${name}@example.com`, ip: '127.0.0.1', adminToken: undefined });
  if (name !== 'keyless') {
    for (const provider of ['openai', 'anthropic']) {
      await putProviderKey(deps, tenant.tenantId, { provider, key: `${provider}-bench-key`, baseUrl: `${process.env['UPSTREAM_URL']}/v1` });
    }
  }
  if (name === 'budgeted') await updateTenant(deps, tenant.tenantId, { settings: { limits: HOSTILE_LIMITS } });
  keys[name] = tenant.apiKey;
}
service.runtime.startWorkers();
await service.runtime.listen(config.host, config.port);
closeWhenTold(async () => {
  await service.close();
  rmSync(dataDir, { recursive: true, force: true });
});
const stalls = stallMeter();
process.on('message', (question) => {
  if (question === 'stalls') process.send?.(stalls.takeReading());
});
announce({ url: `http://127.0.0.1:${(service.runtime.app.server.address() as AddressInfo).port}`, keys });
