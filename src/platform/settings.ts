import { resolve } from 'node:path';
import type { EnvReader } from './config.ts';
import type { SmtpSettings } from './mail-transport.ts';
import { type MetricsExposure, readMetricsExposure } from './metrics-endpoint.ts';

/** How the outbox worker sends: sender address, poll interval and retry policy. */
export interface MailSettings {
  from: string;
  pollMs: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffCapMs: number;
}

/**
 * The settings every service reads alike: the unprefixed ones a deployment
 * sets once for all services (NODE_ENV, DATA_DIR, LOG_LEVEL, REDIS_URL,
 * SMTP_*), and the outbox worker's and /metrics's, under the service's prefix.
 */
export interface SharedSettings {
  production: boolean;
  /** Absolute: SQLite files and generated development secrets. */
  dataDir: string;
  logLevel: string;
  redisUrl: string | undefined;
  /** Undefined when SMTP_HOST is unset: emails are printed to the log. */
  smtp: SmtpSettings | undefined;
  mail: MailSettings;
  /** Where GET /metrics is served ({P}_METRICS_PORT, {P}_METRICS_TOKEN; metrics-endpoint.ts). */
  metricsExposure: MetricsExposure;
}

export interface SharedSettingsOptions {
  /** The service's prefix for its own settings: `AUTH` reads AUTH_MAIL_POLL_MS and the like. */
  prefix: string;
  /** SMTP_FROM when unset. */
  defaultFrom: string;
  /** What the service's emails carry, for the production rule's sentence ("verification links"). */
  mailCarries: string;
}

const HOUR = 3_600_000;

/**
 * Reads the shared settings and applies their production rule: SMTP_HOST is
 * required when NODE_ENV=production, since without it emails only reach the log.
 * Problems are collected on `r` like every other setting's.
 */
export function readSharedSettings(r: EnvReader, options: SharedSettingsOptions): SharedSettings {
  const production = r.env['NODE_ENV'] === 'production';
  const smtpHost = r.string('SMTP_HOST');
  if (production && !smtpHost) {
    r.problems.push(`SMTP_HOST is required when NODE_ENV=production (without it ${options.mailCarries} are only printed to the log)`);
  }
  const p = options.prefix;
  return {
    production,
    dataDir: resolve(r.string('DATA_DIR') ?? './data'),
    logLevel: r.string('LOG_LEVEL') ?? 'info',
    redisUrl: r.string('REDIS_URL'),
    smtp: smtpHost
      ? {
          host: smtpHost,
          port: r.int('SMTP_PORT', 587, 1, 65535),
          user: r.string('SMTP_USER'),
          pass: r.string('SMTP_PASS'),
          tlsCaFile: r.string('SMTP_TLS_CA'),
        }
      : undefined,
    mail: {
      from: r.string('SMTP_FROM') ?? options.defaultFrom,
      pollMs: r.int(`${p}_MAIL_POLL_MS`, 1000, 10, 60_000),
      maxAttempts: r.int(`${p}_MAIL_MAX_ATTEMPTS`, 10, 1, 50),
      backoffBaseMs: r.int(`${p}_MAIL_BACKOFF_SECONDS`, 30, 1, 3600) * 1000,
      backoffCapMs: HOUR,
    },
    metricsExposure: readMetricsExposure(r, p, production),
  };
}
