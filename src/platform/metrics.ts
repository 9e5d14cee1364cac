import { Counter, type CounterConfiguration, collectDefaultMetrics, Gauge, type LabelValues, type Metric, type MetricValueWithName, Registry } from 'prom-client';

/** One Prometheus registry per service instance; no global state, so tests can build many apps. */
export interface Metrics {
  registry: Registry;
  httpRequests: SummedCounter<'route' | 'method' | 'status'>;
  httpDuration: SummedHistogram<'route' | 'method'>;
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
    httpRequests: new SummedCounter({
      name: `${prefix}_http_requests_total`,
      help: 'HTTP requests answered, by route template, method and status.',
      labelNames: ['route', 'method', 'status'],
      registers,
    }),
    httpDuration: new SummedHistogram({
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

/** A counter's count for one set of label values, kept by {@link SummedCounter}. */
export interface CounterChild {
  /** Adds `n` (default 1); a value that is not a positive finite number is ignored, as a counter only goes up. */
  inc(n?: number): void;
}

class Sum<L extends string> implements CounterChild {
  readonly labels: LabelValues<L>;
  n = 0;
  constructor(labels: LabelValues<L>) {
    this.labels = labels;
  }
  inc(n = 1): void {
    if (n > 0 && n !== Number.POSITIVE_INFINITY) this.n += n;
  }
}

/**
 * A labelled prom-client counter counted on hot paths: each set of label
 * values gets a child, looked up by a key the caller builds, whose
 * increments are summed in a number and added to the counter when the
 * registry is read (prom-client's collect hook). A child of prom-client's
 * own (`counter.labels(...)`) hashes and validates its label object on
 * every increment, and the gateway counts seven or so per call.
 */
export class SummedCounter<L extends string> {
  readonly counter: Counter<L>;
  readonly #children = new Map<string, Sum<L>>();

  constructor(config: CounterConfiguration<L>) {
    const children = this.#children;
    const counter: Counter<L> = new Counter<L>({
      ...config,
      collect() {
        for (const child of children.values()) {
          if (child.n === 0) continue;
          counter.inc(child.labels, child.n);
          child.n = 0;
        }
      },
    });
    this.counter = counter;
  }

  /** The child found by `key`, which must identify its label values; made with `labels()` on first use. */
  child(key: string, labels: () => LabelValues<L>): CounterChild {
    let found = this.#children.get(key);
    if (found === undefined) {
      found = new Sum(labels());
      this.#children.set(key, found);
    }
    return found;
  }
}

/** A histogram's observations for one set of label values, kept by {@link SummedHistogram}. */
export interface HistogramChild {
  /** Counts `value` in its bucket; a value that is not a finite number is ignored. */
  observe(value: number): void;
}

class Buckets<L extends string> implements HistogramChild {
  readonly labels: LabelValues<L>;
  readonly #bounds: readonly number[];
  /** Per bucket, the observations at most its bound and above the previous one; the last is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(labels: LabelValues<L>, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

export interface SummedHistogramConfiguration<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  /** Upper bounds, ascending; +Inf is added. */
  buckets: readonly number[];
  registers: Registry[];
}

/**
 * A labelled Prometheus histogram observed on hot paths: each set of label
 * values gets a child, looked up by a key the caller builds, whose
 * observations are counted in place (a bucket found by comparing, a sum and
 * a count) and exposed as a histogram (`_bucket` with `le`, `_sum`,
 * `_count`) when the registry is read. prom-client's own Histogram hashes
 * and validates the label object of every observation, and the gateway
 * observes three per call. It registers itself as a metric of each
 * registry: prom-client formats it with the others.
 */
export class SummedHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  readonly #bounds: readonly number[];
  readonly #children = new Map<string, Buckets<L>>();

  constructor(config: SummedHistogramConfiguration<L>) {
    this.name = config.name;
    this.help = config.help;
    this.#bounds = [...config.buckets].sort((a, b) => a - b);
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The child found by `key`, which must identify its label values; made with `labels()` on first use. */
  child(key: string, labels: () => LabelValues<L>): HistogramChild {
    let found = this.#children.get(key);
    if (found === undefined) {
      found = new Buckets(labels(), this.#bounds);
      this.#children.set(key, found);
    }
    return found;
  }

  /** What prom-client's registry reads: cumulative buckets, sum and count per label set (as its own Histogram gives them). */
  async get(): Promise<{ name: string; help: string; type: 'histogram'; values: MetricValueWithName<string>[]; aggregator: 'sum' }> {
    const values: MetricValueWithName<string>[] = [];
    for (const child of this.#children.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.#bounds.length; i++) {
        cumulative += child.counts[i]!;
        const le = i < this.#bounds.length ? this.#bounds[i]! : '+Inf';
        values.push({ labels: { le, ...child.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { ...child.labels }, value: child.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...child.labels }, value: child.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** prom-client's registry.resetMetrics(): every count back to nothing. */
  reset(): void {
    this.#children.clear();
  }
}
