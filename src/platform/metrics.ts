import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** One Prometheus registry per service instance; no global state, so tests can build many apps. */
export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'route' | 'method' | 'status'>;
  httpDuration: Histogram<'route' | 'method'>;
  mailSent: Counter;
  mailFailed: Counter;
  mailRetried: Counter;
  mailOutbox: Gauge<'status'>;
  purged: Counter<'table'>;
  rateLimited: Counter<'bucket'>;
}

export function createMetrics(prefix: string, withDefaults = true): Metrics {
  const registry = new Registry();
  if (withDefaults) collectDefaultMetrics({ register: registry, prefix: `${prefix}_` });
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: `${prefix}_http_requests_total`,
      help: 'HTTP requests answered, by route template, method and status.',
      labelNames: ['route', 'method', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: `${prefix}_http_request_duration_seconds`,
      help: 'Time from request received to response sent.',
      labelNames: ['route', 'method'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    mailSent: new Counter({ name: `${prefix}_mail_sent_total`, help: 'Emails handed to the transport.', registers }),
    mailFailed: new Counter({
      name: `${prefix}_mail_failed_total`,
      help: 'Emails given up on after their last attempt (status failed in the outbox).',
      registers,
    }),
    mailRetried: new Counter({ name: `${prefix}_mail_retries_total`, help: 'Failed send attempts that will be retried.', registers }),
    mailOutbox: new Gauge({
      name: `${prefix}_mail_outbox`,
      help: 'Outbox rows by status, as of the last worker pass.',
      labelNames: ['status'],
      registers,
    }),
    purged: new Counter({
      name: `${prefix}_purged_rows_total`,
      help: 'Rows removed by the purge job, by table.',
      labelNames: ['table'],
      registers,
    }),
    rateLimited: new Counter({
      name: `${prefix}_rate_limited_total`,
      help: 'Requests refused (or silently dropped) by a rate-limit bucket.',
      labelNames: ['bucket'],
      registers,
    }),
  };
}
