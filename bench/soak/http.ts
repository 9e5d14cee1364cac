import { Pool } from 'undici';

/**
 * The soak's HTTP client: one undici Pool per service, keep-alive
 * connections as a product's backend holds them. Every answer is read to its
 * end; the time of its first body byte is kept (for streams, the first SSE
 * event). Anything that is not the expected answer becomes a Failure whose
 * `kind` is what the report counts by.
 */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** From the send to the first body byte, in ms (NaN for an empty body). */
  ttfbMs: number;
}

/** A request that did not get the answer it should have. kind: "http 500", "timeout", "network ECONNRESET", "bad answer", "false hit"... */
export class Failure extends Error {
  readonly kind: string;
  constructor(kind: string, detail: string) {
    super(detail);
    this.kind = kind;
  }
}

const TIMEOUT_MS = 30_000;
type Method = 'GET' | 'POST' | 'PATCH';

export class Origin {
  readonly url: string;
  readonly #pool: Pool;

  constructor(url: string, connections: number) {
    this.url = url;
    this.#pool = new Pool(url, { connections, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS, keepAliveTimeout: 30_000 });
  }

  async send(method: Method, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    const t0 = performance.now();
    try {
      const res = await this.#pool.request({ method, path, headers, body });
      let ttfbMs = Number.NaN;
      let text = '';
      res.body.setEncoding('utf8');
      for await (const chunk of res.body) {
        if (Number.isNaN(ttfbMs)) ttfbMs = performance.now() - t0;
        text += chunk as string;
      }
      return { status: res.statusCode, headers: res.headers, text, ttfbMs };
    } catch (err) {
      const code = (err as { code?: string }).code ?? (err as Error).name;
      throw new Failure(/TIMEOUT/i.test(code) ? 'timeout' : `network ${code}`, String(err));
    }
  }

  /** The answer when its status is `expected`, else a Failure "http <status>" with the start of the body. */
  async expect(expected: number, method: Method, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    const answer = await this.send(method, path, headers, body);
    if (answer.status !== expected) throw new Failure(`http ${answer.status}`, `${method} ${path}: ${answer.text.slice(0, 300)}`);
    return answer;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** JSON of an answer's body, or a Failure "bad answer". */
export function json<T>(answer: Answer): T {
  try {
    return JSON.parse(answer.text) as T;
  } catch {
    throw new Failure('bad answer', `not JSON: ${answer.text.slice(0, 200)}`);
  }
}

export const header = (answer: Answer, name: string): string | undefined => {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
};
