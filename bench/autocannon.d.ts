/** The part of autocannon's programmatic API the benchmarks use (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  /** One request of a connection's sequence; setupRequest rebuilds it before every send. */
  export interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    /** Returns the request to send (a falsy value skips to the next one). */
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request | null | undefined;
    /** Called with each response (body as text) before the connection's next request is built. */
    onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string | string[]>) => void;
  }

  /** One connection. */
  export interface Client extends EventEmitter {
    /** Replaces the connection's request sequence (pipelining 1 only). */
    setRequests(requests: Request[]): void;
  }

  export interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
    /** Requests to send in all, then stop (overrides duration). */
    amount?: number;
    /** Requests per second across all connections. */
    overallRate?: number;
    /** Seconds before a request counts as timed out. */
    timeout?: number;
    ignoreCoordinatedOmission?: boolean;
    expectBody?: string;
    /** Called once for each connection as it is created. */
    setupClient?: (client: Client) => void;
    requests?: Request[];
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
