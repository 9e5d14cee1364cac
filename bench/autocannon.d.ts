/** The part of autocannon's programmatic API the benchmarks use (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
    /** Requests per second across all connections. */
    overallRate?: number;
    /** Seconds before a request counts as timed out. */
    timeout?: number;
    ignoreCoordinatedOmission?: boolean;
    expectBody?: string;
  }

  export interface Histogram {
    average: number;
    min: number;
    max: number;
    p50: number;
    p99: number;
  }

  export interface Result {
    /** Seconds. */
    duration: number;
    errors: number;
    timeouts: number;
    mismatches: number;
    non2xx: number;
    '2xx': number;
    latency: Histogram;
    requests: Histogram & { sent: number };
    statusCodeStats: Record<string, { count: number }>;
  }

  export interface Instance extends EventEmitter {
    stop(): void;
  }

  export default function autocannon(options: Options, done: (err: Error | null, result: Result) => void): Instance;
}
