import { ConfigError } from '../platform/config.ts';
import { loadAuthConfig } from './config.ts';
import { createAuthService } from './service.ts';

/** Starts the account service alone: `npm run start:auth`. */
export async function startAuth(env: Record<string, string | undefined> = process.env) {
  const config = loadAuthConfig(env);
  const service = await createAuthService(config);
  service.startWorkers();
  const address = await service.app.listen({ host: config.host, port: config.port });
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

export function exitOnConfigError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  throw err;
}

/** Closes on SIGINT/SIGTERM: stops accepting, finishes in-flight requests and the mail pass, then exits. */
export function closeOnSignals(close: () => Promise<void>): void {
  let closing = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (closing) process.exit(1);
      closing = true;
      close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

if (import.meta.main) {
  const service = await startAuth().catch(exitOnConfigError);
  closeOnSignals(() => service.close());
}
