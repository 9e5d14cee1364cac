import type { App } from '../platform/http.ts';
import type { PeriodicJob } from '../platform/jobs.ts';
import { createRateLimiter } from '../platform/limits.ts';
import type { OutboxWorker } from '../platform/mail.ts';
import { createServiceRuntime, type RuntimeOverrides, type ServiceRuntime } from '../platform/runtime.ts';
import { buildAuthApp } from './app.ts';
import type { AuthConfig } from './config.ts';
import type { AuthDeps } from './deps.ts';
import { authMigrations } from './migrations.ts';
import { PENDING_REQUEST_TARGETS, purgeExpired } from './purge.ts';
import type { AuthTables } from './schema.ts';

export interface AuthService {
  app: App;
  deps: AuthDeps;
  mailWorker: OutboxWorker;
  purgeJob: PeriodicJob;
  /** Every minute: expired pending authorization requests. */
  requestPurgeJob: PeriodicJob;
  runtime: ServiceRuntime<AuthDeps>;
  /** Starts the background workers (the app is listened on by the caller). */
  startWorkers(): void;
  close(): Promise<void>;
}

export type AuthServiceOverrides = RuntimeOverrides;

const PURGE_JOB = 'auth:purge';
const REQUEST_PURGE_JOB = 'auth:purge-requests';

/** Opens storage, runs migrations and wires the account service together on the platform's runtime. */
export async function createAuthService(config: AuthConfig, overrides: AuthServiceOverrides = {}): Promise<AuthService> {
  const runtime = await createServiceRuntime<AuthTables, AuthDeps>({
    name: 'auth',
    settings: config,
    migrations: authMigrations,
    overrides,
    deps: (core) => ({
      ...core,
      config,
      limiters: {
        register: createRateLimiter('auth:register', config.limits.register, core.redis),
        login: createRateLimiter('auth:login', config.limits.login, core.redis),
        resend: createRateLimiter('auth:resend', config.limits.resend, core.redis),
        resendPerEmail: createRateLimiter('auth:resend-email', config.limits.resendPerEmail, core.redis),
        forgot: createRateLimiter('auth:forgot', config.limits.forgot, core.redis),
        forgotPerEmail: createRateLimiter('auth:forgot-email', config.limits.forgotPerEmail, core.redis),
      },
    }),
    jobs: (deps) => [
      {
        name: PURGE_JOB,
        intervalMs: config.purgeIntervalMs,
        run: async () => {
          await purgeExpired(deps);
        },
      },
      // Pending authorization requests come from an endpoint anyone can call: purged every minute.
      {
        name: REQUEST_PURGE_JOB,
        intervalMs: 60_000,
        enabled: config.oauth !== undefined,
        run: async () => {
          await purgeExpired(deps, PENDING_REQUEST_TARGETS);
        },
      },
    ],
    buildApp: buildAuthApp,
  });
  return {
    app: runtime.app,
    deps: runtime.deps,
    mailWorker: runtime.mailWorker,
    purgeJob: runtime.jobs.get(PURGE_JOB)!,
    requestPurgeJob: runtime.jobs.get(REQUEST_PURGE_JOB)!,
    runtime,
    startWorkers: () => runtime.startWorkers(),
    close: () => runtime.close(),
  };
}
