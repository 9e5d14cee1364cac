import { resealOutbox, rotateIn } from '../platform/key-rotation.ts';
import { type ConfiguredService, runServices, type ServiceEntry } from '../platform/service-entry.ts';
import { type AuthConfig, loadAuthConfig } from './config.ts';
import { authMigrations } from './migrations.ts';
import { type AuthService, createAuthService } from './service.ts';

/** The account service as the entry points list it (src/services.ts). */
export const authService: ServiceEntry = {
  name: 'auth',
  configure(env): ConfiguredService {
    const config = loadAuthConfig(env);
    return {
      name: 'auth',
      database: { url: config.databaseUrl, sqlitePath: config.sqlitePath },
      migrations: authMigrations,
      async start() {
        const service = await startAuth(config);
        return { name: 'auth', url: config.baseUrl, close: () => service.close() };
      },
      rotateKeys: () =>
        rotateIn({ url: config.databaseUrl, sqlitePath: config.sqlitePath }, authMigrations, async (db) => [
          await resealOutbox(db, config.encryptionKey, config.previousEncryptionKeys, 'auth outbox (AUTH_ENCRYPTION_KEY)'),
        ]),
    };
  },
};

/** Creates the account service, starts its workers, listens and prints where (and the development API key). */
export async function startAuth(config: AuthConfig): Promise<AuthService> {
  const service = await createAuthService(config);
  service.startWorkers();
  const address = await service.runtime.listen(config.host, config.port);
  const { log } = service.deps;
  const oauth = config.oauth ? `, OAuth ${config.oauth.publicEndpoints ? 'public' : 'behind X-Api-Key'}` : '';
  log.info(
    `account service listening on ${address}, public URL ${config.baseUrl} (${service.deps.dialect}${config.redisUrl ? ', redis' : ''}${oauth})`,
  );
  if (config.apiKeyGenerated) {
    log.info(`development API key (kept in ${config.dataDir}/dev-secrets.json): X-Api-Key: ${config.apiKey}`);
  }
  return service;
}

/** `npm run start:auth`: the account service alone. */
if (import.meta.main) await runServices([authService]);
