import { resealOutbox, rotateIn } from '../platform/key-rotation.ts';
import { type ConfiguredService, runServices, type ServiceEntry } from '../platform/service-entry.ts';
import { type GatewayConfig, loadGatewayConfig } from './config.ts';
import { gatewayMigrations } from './migrations.ts';
import { resealProviderKeys } from './control-plane/provider-keys.ts';
import { resealStoredResponses } from './surfaces/responses/stored-reseal.ts';
import type { GatewayDb } from './schema.ts';
import { createGatewayService, type GatewayService } from './service.ts';
import { privateUpstreamsWarning } from './control-plane/upstream-policy.ts';

/** The gateway as the entry points list it (src/services.ts). */
export const gatewayService: ServiceEntry = {
  name: 'gateway',
  configure(env): ConfiguredService {
    const config = loadGatewayConfig(env);
    return {
      name: 'gateway',
      database: { url: config.databaseUrl, sqlitePath: config.sqlitePath },
      migrations: gatewayMigrations,
      async start() {
        const service = await startGateway(config);
        return { name: 'gateway', url: config.baseUrl, close: () => service.close() };
      },
      rotateKeys: () =>
        rotateIn({ url: config.databaseUrl, sqlitePath: config.sqlitePath }, gatewayMigrations, async (db) => [
          await resealProviderKeys(db as GatewayDb, config.encryptionKey, config.previousEncryptionKeys),
          await resealOutbox(db, config.encryptionKey, config.previousEncryptionKeys, 'gateway outbox (GATEWAY_ENCRYPTION_KEY)'),
          await resealStoredResponses(db as GatewayDb, config.encryptionKey, config.previousEncryptionKeys),
        ]),
    };
  },
};

/** Creates the gateway, starts its workers, listens and prints where. */
export async function startGateway(config: GatewayConfig): Promise<GatewayService> {
  const service = await createGatewayService(config);
  service.runtime.startWorkers();
  const address = await service.runtime.listen(config.host, config.port);
  const { log } = service.deps;
  const warning = privateUpstreamsWarning(config);
  if (warning) log.warn(warning);
  log.info(
    `AI gateway listening on ${address}, public URL ${config.baseUrl} (${service.deps.dialect}${config.redisUrl ? ', redis' : ''}, sign-up ${config.signup}); OpenAI base URL ${config.baseUrl}/v1`,
  );
  if (config.accounts) {
    log.info(
      `console: "Sign in with your account" is wired to the account service at ${config.accounts.issuer} (client ${config.accounts.clientId}, redirect URI ${config.accounts.redirectUri}); sign in at ${config.baseUrl}/sign-in`,
    );
  }
  return service;
}

/** `npm run start:gateway`: the gateway alone. */
if (import.meta.main) await runServices([gatewayService]);
