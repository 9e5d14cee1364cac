import type { Redis } from 'ioredis';
import type { Kysely, Migration } from 'kysely';
import type { Logger } from 'pino';
import { type BackgroundWork, backgroundWork } from './background.ts';
import { type Clock, systemClock } from './clock.ts';
import { closeDatabase, type DialectName, migrateToLatest, openDatabase } from './db.ts';
import type { App } from './http.ts';
import { type PeriodicJob, periodicJob } from './jobs.ts';
import { createLogger } from './logging.ts';
import { type OutboxContext, type OutboxWorker, outboxWorker } from './mail.ts';
import { logTransport, type MailTransport, type SmtpSettings, smtpTransport } from './mail-transport.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { type MetricsExposure, metricsExposureLine, startMetricsServer } from './metrics-endpoint.ts';
import { connectRedis } from './redis.ts';
import type { MailSettings } from './settings.ts';
import { applyV8Tuning } from './v8-tuning.ts';

/** What the runtime needs of a service's configuration (AuthConfig and GatewayConfig have these fields). */
export interface RuntimeSettings {
  production: boolean;
  logLevel: string;
  /** PostgreSQL when set, else SQLite at sqlitePath. */
  databaseUrl: string | undefined;
  sqlitePath: string;
  redisUrl: string | undefined;
  smtp: SmtpSettings | undefined;
  mail: MailSettings;
  /** AES-256-GCM key sealing outbox bodies at rest. */
  encryptionKey: Buffer;
  /** Keys being retired (…_ENCRYPTION_KEY_PREVIOUS): bodies they sealed still open. */
  previousEncryptionKeys?: readonly Buffer[];
  /** Where GET /metrics is served: a port of its own is listened on beside the service's (the app mounts the route on its own port). */
  metricsExposure?: MetricsExposure;
}

/** What tests replace. */
export interface RuntimeOverrides {
  clock?: Clock;
  logger?: Logger;
  transport?: MailTransport;
  /** Default metrics include process metrics; tests building many apps turn them off. */
  processMetrics?: boolean;
}

/** What the runtime opened, for the service to build its dependencies from. */
export interface ServiceCore<DB> {
  db: Kysely<DB>;
  dialect: DialectName;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** Set when REDIS_URL is: state shared by replicas. */
  redis: Redis | undefined;
  /** What enqueueEmail needs: the clock and the key sealing email bodies. */
  outbox: OutboxContext;
  /** Nudges the outbox worker after a commit that queued mail. */
  mailQueued: () => void;
  /** Work a request starts after its reply; close() waits for it. */
  background: BackgroundWork;
}

/** A periodic job: runs every intervalMs on one replica per tick; `enabled: false` builds it without starting it. */
export interface JobSpec {
  name: string;
  intervalMs: number;
  run: () => Promise<void>;
  enabled?: boolean;
}

export interface ServiceRuntimeOptions<DB, Deps> {
  /** Logger name and metrics prefix. */
  name: string;
  settings: RuntimeSettings;
  migrations: Record<string, Migration>;
  /** The service's dependencies, made from what the runtime opened. */
  deps: (core: ServiceCore<DB>) => Deps;
  jobs?: (deps: Deps) => JobSpec[];
  buildApp: (deps: Deps) => Promise<App>;
  /**
   * The service's own shutdown work, after the app has drained (no request
   * in flight) and before the workers and connections close: what the
   * requests left queued (the gateway's usage records) is written here.
   */
  afterDrain?: (deps: Deps) => Promise<void>;
  overrides?: RuntimeOverrides;
}

export interface ServiceRuntime<Deps> {
  name: string;
  app: App;
  deps: Deps;
  log: Logger;
  mailWorker: OutboxWorker;
  /** Every job by name, started or not. */
  jobs: Map<string, PeriodicJob>;
  /** Starts the mail worker and the enabled jobs. */
  startWorkers(): void;
  /** Listens (and on {P}_METRICS_PORT, when set, serves /metrics there); resolves with the service's address. */
  listen(host: string, port: number): Promise<string>;
  /** The metrics listener's address once listening, when {P}_METRICS_PORT is set. */
  metricsUrl(): string | undefined;
  /** Stops accepting, finishes in-flight requests and background work, stops the workers, closes Redis and the database. */
  close(): Promise<void>;
}

/**
 * The service shell: logger, metrics, database (opened and migrated), Redis
 * (when configured, waited for), outbox worker (SMTP when configured, else
 * the log), periodic jobs, background work, and shutdown in the one order
 * that loses nothing: requests, then the work they started, then the
 * workers, then the connections.
 */
export async function createServiceRuntime<DB, Deps>(options: ServiceRuntimeOptions<DB, Deps>): Promise<ServiceRuntime<Deps>> {
  const { name, settings, overrides = {} } = options;
  applyV8Tuning();
  const log =
    overrides.logger ?? (await createLogger({ level: settings.logLevel, name, production: settings.production }));
  const clock = overrides.clock ?? systemClock;
  const metrics = createMetrics(name, overrides.processMetrics ?? true);
  const { db, dialect } = await openDatabase<DB>({
    url: settings.databaseUrl,
    sqlitePath: settings.sqlitePath,
    onConnectionLost: (err) => log.warn({ err: err.message }, 'database connection lost; the next query reconnects'),
  });
  let redis: Redis | undefined;
  try {
    await migrateToLatest(db, options.migrations);
    if (settings.redisUrl) redis = await connectRedis(settings.redisUrl, log);
    const transport = overrides.transport ?? (settings.smtp ? await smtpTransport(settings.smtp) : logTransport(log));
    const mailWorker = outboxWorker({ db, dialect, clock, keys: [settings.encryptionKey, ...(settings.previousEncryptionKeys ?? [])], transport, log, metrics, ...settings.mail });
    const background = backgroundWork(log);
    const core: ServiceCore<DB> = {
      db,
      dialect,
      clock,
      log,
      metrics,
      redis,
      outbox: { clock, key: settings.encryptionKey },
      mailQueued: () => mailWorker.wake(),
      background,
    };
    const deps = options.deps(core);
    const specs = options.jobs?.(deps) ?? [];
    const jobs = new Map(specs.map((spec) => [spec.name, periodicJob({ ...spec, db, dialect, clock, log })]));
    const app = await options.buildApp(deps);
    let metricsServer: { url: string; close(): Promise<void> } | undefined;

    return {
      name,
      app,
      deps,
      log,
      mailWorker,
      jobs,
      startWorkers() {
        mailWorker.start();
        for (const spec of specs) if (spec.enabled !== false) jobs.get(spec.name)?.start();
      },
      async listen(host, port) {
        const address = await app.listen({ host, port });
        const exposure = settings.metricsExposure;
        if (exposure?.port !== undefined) metricsServer = await startMetricsServer({ exposure, metrics, log, host });
        if (exposure) log.info(metricsExposureLine(exposure, metricsServer?.url));
        return address;
      },
      metricsUrl: () => metricsServer?.url,
      async close() {
        // server.close() closes the connections idle at that moment; one whose last response (a long
        // stream) ends later would be held open by keep-alive (72 s) and hold the shutdown with it.
        const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
        try {
          await app.close();
        } finally {
          clearInterval(sweep);
        }
        await metricsServer?.close();
        await options.afterDrain?.(deps);
        await background.settled();
        await mailWorker.stop();
        for (const job of jobs.values()) await job.stop();
        redis?.disconnect();
        await closeDatabase(db);
      },
    };
  } catch (err) {
    // A failed start-up leaves no connection open behind it.
    redis?.disconnect();
    await closeDatabase(db);
    throw err;
  }
}
