import { Pool } from 'undici';

/**
 * Time to first byte of streamed answers: POSTs `body` (a stream: true
 * request) `requests` times, `concurrency` at a time, and times each from
 * the send to the first byte of the response body (the first SSE event),
 * and to its end. Headers alone do not count: a gateway may send them
 * before the provider has answered.
 */
export interface TtfbRun {
  /** ms, of each 200 answer. */
  ttfb: number[];
  total: number[];
  /** Answers other than 200 or failed connections, by status or error code, e.g. {"500": 200}. */
  failures: Record<string, number>;
  /** The first failure's body (its first 200 characters) or error message. */
  firstFailure: string | undefined;
}

export async function streamTtfb(
  baseUrl: string,
  headers: Record<string, string>,
  /** The request body, or a function making each one (bodies that differ: no cache can answer them). */
  body: string | (() => string),
  /** `path`: appended to baseUrl (default /chat/completions; the Messages benchmark's is /messages). */
  options: { requests: number; concurrency: number; path?: string },
): Promise<TtfbRun> {
  const url = new URL(`${baseUrl}${options.path ?? '/chat/completions'}`);
  const pool = new Pool(url.origin, { connections: options.concurrency });
  const run: TtfbRun = { ttfb: [], total: [], failures: {}, firstFailure: undefined };
  const fail = (key: string, detail: string) => {
    run.failures[key] = (run.failures[key] ?? 0) + 1;
    run.firstFailure ??= detail.slice(0, 200);
  };
  let left = options.requests;
  async function worker() {
    while (left-- > 0) {
      const t0 = performance.now();
      try {
        const res = await pool.request({ path: url.pathname, method: 'POST', headers, body: typeof body === 'string' ? body : body() });
        if (res.statusCode !== 200) {
          fail(String(res.statusCode), await res.body.text());
          continue;
        }
        let first = Number.NaN;
        for await (const _ of res.body) {
          if (Number.isNaN(first)) first = performance.now() - t0;
        }
        run.ttfb.push(first);
        run.total.push(performance.now() - t0);
      } catch (err) {
        fail((err as { code?: string }).code ?? 'error', String(err));
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  await pool.close();
  return run;
}
