/**
 * An error a client caused (or a server error with a stable code). The HTTP
 * layer sends it in its scope's error format (RFC 9457 problem+json, RFC 6749,
 * OpenAI's; see error-format.ts); `detail` is sent, `cause` is only logged.
 */
export class HttpProblem extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  readonly errors: { field: string; message: string }[] | undefined;
  /** The request field at fault, for formats that name one (the OpenAI error shape's `param`). */
  readonly param: string | undefined;
  /** The error's type where a format has types (OpenAI's `type`); unset: derived from the status. */
  readonly type: string | undefined;

  constructor(
    status: number,
    code: string,
    detail: string,
    options: {
      headers?: Record<string, string>;
      errors?: { field: string; message: string }[];
      param?: string;
      type?: string;
      cause?: unknown;
    } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = 'HttpProblem';
    this.status = status;
    this.code = code;
    this.headers = options.headers ?? {};
    this.errors = options.errors;
    this.param = options.param ?? options.errors?.[0]?.field;
    this.type = options.type;
  }
}

/** A problem that names the request field at fault. */
export function fieldProblem(code: string, field: string, detail: string): HttpProblem {
  return new HttpProblem(400, code, detail, { errors: [{ field, message: detail }] });
}

/** 429 with Retry-After in whole seconds (at least 1). */
export function tooManyRequests(code: string, detail: string, retryAfterMs: number): HttpProblem {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new HttpProblem(429, code, detail, { headers: { 'retry-after': String(seconds) } });
}
