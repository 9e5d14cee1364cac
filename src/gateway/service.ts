import { createRateLimiter } from '../platform/limits.ts';
import { createServiceRuntime, type RuntimeOverrides, type ServiceRuntime } from '../platform/runtime.ts';
import { safeConnector } from '../platform/safe-connect.ts';
import { buildGatewayApp } from './app.ts';
import type { GatewayConfig } from './config.ts';
import { createDataPlane, type DataPlane } from './data-plane/data-plane.ts';
import type { GatewayDeps } from './deps.ts';
import { gatewayMigrations } from './migrations.ts';
import { purgeGateway } from './usage/purge.ts';
import type { GatewayTables } from './schema.ts';
import { upstreamPolicy } from './control-plane/upstream-policy.ts';

export interface GatewayService {
  runtime: ServiceRuntime<GatewayDeps>;
  deps: GatewayDeps;
  dataPlane: DataPlane;
  /** Readiness fails from here on; then the app drains (in-flight calls and streams finish), usage is written, and everything closes. */
  close(): Promise<void>;
}

/** Opens storage, runs migrations and wires the gateway together on the platform's runtime. */
export async function createGatewayService(config: GatewayConfig, overrides: RuntimeOverrides = {}): Promise<GatewayService> {
  let dataPlane: DataPlane | undefined;
  let draining = false;
  const policy = upstreamPolicy(config.allowPrivateUpstreams);
  const runtime = await createServiceRuntime<GatewayTables, GatewayDeps>({
    name: 'gateway',
    settings: config,
    migrations: gatewayMigrations,
    overrides,
    deps: (core) => {
      const plane = createDataPlane({
        db: core.db,
        clock: core.clock,
        config,
        log: core.log,
        registry: core.metrics.registry,
        redis: core.redis,
        // Every new upstream connection resolves, checks and pins its address (SSRF, DNS rebinding).
        connector: (_origin, timeout) => safeConnector(policy, { connect: { timeout } }),
      });
      dataPlane = plane;
      return {
        ...core,
        config,
        limiters: {
          signup: createRateLimiter('gateway:signup', config.limits.signup, core.redis),
          magicLink: createRateLimiter('gateway:magic-link', config.limits.magicLink, core.redis),
          magicLinkPerEmail: createRateLimiter('gateway:magic-link-email', config.limits.magicLinkPerEmail, core.redis),
          verify: createRateLimiter('gateway:magic-link-verify', config.limits.verify, core.redis),
          apiKeyCreate: createRateLimiter('gateway:api-key-create', config.limits.apiKeyCreate, core.redis),
          providerKeys: createRateLimiter('gateway:provider-keys', config.limits.providerKeys, core.redis),
        },
        apiKeyRevoked: (keyHash) => plane.bus.publish({ kind: 'api-key', keyHash }),
        tenantChanged: (tenantId) => plane.bus.publish({ kind: 'tenant', tenantId }),
        budgets: plane.budgets,
        upstream: plane.pools,
      };
    },
    jobs: (deps) => [{ name: 'gateway:purge', intervalMs: config.purgeIntervalMs, run: async () => void (await purgeGateway(deps)) }],
    buildApp: (deps) => buildGatewayApp(deps, dataPlane!.routes, () => draining),
    afterDrain: () => dataPlane!.close(),
  });
  let closing: Promise<void> | undefined;
  return {
    runtime,
    deps: runtime.deps,
    dataPlane: dataPlane!,
    close() {
      // Once: a second call (a second signal, a test's cleanup) waits for the same shutdown.
      closing ??= (async () => {
        draining = true;
        await runtime.close();
      })();
      return closing;
    },
  };
}
