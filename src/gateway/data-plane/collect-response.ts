import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** A whole answer read from an upstream. */
export interface Collected {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface CollectOptions {
  path: string;
  headers: Record<string, string>;
  body: string | Buffer;
  signal: AbortSignal;
  /** Until the response headers arrive. */
  headersTimeout: number;
  /** Longest silence between two body chunks. */
  bodyTimeout: number;
  /** Most bytes of a 2xx body; past it the call fails with `tooLarge`. */
  maxBytes: number;
  /** Most bytes of any other status's body; past it the rest is dropped (an error message needs no more). */
  errorBytes: number;
  /** The error a 2xx body larger than maxBytes fails with. */
  tooLarge: () => Error;
}

/**
 * POSTs a request and reads the whole answer, through undici's dispatch
 * handler API rather than `request()`: no body stream is made for an
 * answer that is read whole at once (each stream costs a Readable, its
 * events and several process ticks on the event loop that answers calls).
 * Streamed calls keep `request()` and its body stream (relay-stream.ts).
 * Rejects with undici's errors (timeouts, resets), the signal's reason
 * once it aborts, or `tooLarge`; an answer that is not 2xx resolves with
 * what could be read of it, even if the connection failed during its body.
 */
export function collectResponse(dispatcher: Dispatcher, options: CollectOptions): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const handler = new CollectHandler(options, resolve, reject);
    if (options.signal.aborted) {
      reject(options.signal.reason);
      return;
    }
    options.signal.addEventListener('abort', handler.onAbort, { once: true });
    dispatcher.dispatch(
      {
        method: 'POST',
        path: options.path,
        headers: options.headers,
        body: options.body,
        headersTimeout: options.headersTimeout,
        bodyTimeout: options.bodyTimeout,
      },
      handler,
    );
  });
}

class CollectHandler implements Dispatcher.DispatchHandler {
  readonly #options: CollectOptions;
  readonly #resolve: (collected: Collected) => void;
  readonly #reject: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #statusCode = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;
  #limit: number;
  #truncate = false;

  constructor(options: CollectOptions, resolve: (collected: Collected) => void, reject: (err: unknown) => void) {
    this.#options = options;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#limit = options.maxBytes;
  }

  /** The caller's signal fired: the request is aborted wherever it is (queued, sent, reading). */
  readonly onAbort = () => {
    const reason = this.#options.signal.reason;
    if (this.#controller) this.#controller.abort(reason);
    else this.#fail(reason);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#settled) controller.abort(new Error('the call ended before its request was sent'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#statusCode = statusCode;
    this.#headers = headers;
    // Set on every call: an informational (1xx) head, if one is passed on, is followed by the real one.
    this.#truncate = statusCode < 200 || statusCode >= 300;
    this.#limit = this.#truncate ? this.#options.errorBytes : this.#options.maxBytes;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    if (this.#size + chunk.length <= this.#limit) {
      this.#chunks.push(chunk);
      this.#size += chunk.length;
      return;
    }
    if (this.#truncate) {
      this.#chunks.push(chunk.subarray(0, this.#limit - this.#size));
      this.#done();
      controller.abort(new Error('the rest of the answer is not read'));
      return;
    }
    const err = this.#options.tooLarge();
    this.#fail(err);
    controller.abort(err);
  }

  onResponseEnd(): void {
    this.#done();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    // An error answer cut short still says what the provider refused: what was read of it is the answer.
    if (this.#truncate) this.#done();
    else this.#fail(error);
  }

  #done(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#options.signal.removeEventListener('abort', this.onAbort);
    const chunks = this.#chunks;
    this.#resolve({ statusCode: this.#statusCode, headers: this.#headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
  }

  #fail(err: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#options.signal.removeEventListener('abort', this.onAbort);
    this.#reject(err);
  }
}
