import { Redis } from 'ioredis';
import pino, { type Logger } from 'pino';
import { backgroundWork } from '../platform/background.ts';
import { type Clock, systemClock } from '../platform/clock.ts';
import { closeDatabase, migrateToLatest, openDatabase } from '../platform/db.ts';
import type { App } from '../platform/http.ts';
import { periodicJob, type PeriodicJob } from '../platform/jobs.ts';
import { createRateLimiter } from '../platform/limits.ts';
import { loggerOptions } from '../platform/logging.ts';
import { outboxWorker, type OutboxWorker } from '../platform/mail.ts';
import { logTransport, type MailTransport, smtpTransport } from '../platform/mail-transport.ts';
import { createMetrics } from '../platform/metrics.ts';
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
  /** Starts the background workers (the app is listened on by the caller). */
  startWorkers(): void;
  close(): Promise<void>;
}

export interface AuthServiceOverrides {
  clock?: Clock;
  logger?: Logger;
  transport?: MailTransport;
  /** Default metrics include process metrics; tests building many apps turn them off. */
  processMetrics?: boolean;
}

/** Opens storage, runs migrations and wires the account service together. */
export async function createAuthService(config: AuthConfig, overrides: AuthServiceOverrides = {}): Promise<AuthService> {
  const log = overrides.logger ?? pino(loggerOptions(config.logLevel, 'auth'));
  const clock = overrides.clock ?? systemClock;
  const metrics = createMetrics('auth', overrides.processMetrics ?? true);
  const { db, dialect } = openDatabase<AuthTables>({ url: config.databaseUrl, sqlitePath: config.sqlitePath });
  await migrateToLatest(db, authMigrations);

  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 2, enableOfflineQueue: false }) : undefined;
  redis?.on('error', (err) => log.warn({ err: err.message }, 'redis error'));
  // Until the client is connected every command fails over to the per-process bucket, so a fresh
  // replica would not share limits; wait for it (bounded: Redis being down must not stop start-up).
  if (redis) await redisReady(redis, 5000, log);
  const limiters = {
    register: createRateLimiter('auth:register', config.limits.register, redis),
    login: createRateLimiter('auth:login', config.limits.login, redis),
    resend: createRateLimiter('auth:resend', config.limits.resend, redis),
    resendPerEmail: createRateLimiter('auth:resend-email', config.limits.resendPerEmail, redis),
    forgot: createRateLimiter('auth:forgot', config.limits.forgot, redis),
    forgotPerEmail: createRateLimiter('auth:forgot-email', config.limits.forgotPerEmail, redis),
  };

  const transport = overrides.transport ?? (config.smtp ? smtpTransport(config.smtp) : logTransport(log));
  const mailWorker = outboxWorker({
    db,
    dialect,
    clock,
    key: config.encryptionKey,
    transport,
    log,
    metrics,
    ...config.mail,
  });

  const background = backgroundWork(log);
  const outbox = { clock, key: config.encryptionKey };
  const deps: AuthDeps = {
    db,
    dialect,
    clock,
    config,
    log,
    metrics,
    limiters,
    redis,
    outbox,
    mailQueued: () => mailWorker.wake(),
    background,
  };
  const purgeJob = periodicJob({
    name: 'auth:purge',
    intervalMs: config.purgeIntervalMs,
    db,
    dialect,
    clock,
    log,
    run: async () => {
      await purgeExpired(deps);
    },
  });
  // Pending authorization requests come from an endpoint anyone can call: purged every minute.
  const requestPurgeJob = periodicJob({
    name: 'auth:purge-requests',
    intervalMs: 60_000,
    db,
    dialect,
    clock,
    log,
    run: async () => {
      await purgeExpired(deps, PENDING_REQUEST_TARGETS);
    },
  });
  const app = await buildAuthApp(deps);

  return {
    app,
    deps,
    mailWorker,
    purgeJob,
    requestPurgeJob,
    startWorkers() {
      mailWorker.start();
      purgeJob.start();
      if (config.oauth) requestPurgeJob.start();
    },
    async close() {
      await app.close();
      await background.settled();
      await mailWorker.stop();
      await purgeJob.stop();
      await requestPurgeJob.stop();
      redis?.disconnect();
      await closeDatabase(db);
    },
  };
}

function redisReady(redis: Redis, timeoutMs: number, log: Logger): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      log.warn('redis not ready after 5 s; rate limits stay per process until it is');
      resolve();
    }, timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
