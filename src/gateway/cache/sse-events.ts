import { Writable } from 'node:stream';

/**
 * What dedup's own upstream call writes its stream to instead of a socket:
 * the adapter's output, cut into whole events for the flight (the
 * translators write whole events, but nothing here relies on it). Pushes
 * back only when `hold` says so (the leader's client is slow: in-flight.ts);
 * other clients' sockets buffer for themselves, so a slow one does not slow
 * the others.
 */
export class EventSink extends Writable {
  readonly #onEvent: (text: string) => void;
  readonly #onEnd: () => void;
  readonly #hold: ((resume: () => void) => boolean) | undefined;
  #carry = '';

  /** `hold(resume)`: true to take no more until `resume` is called. */
  constructor(onEvent: (text: string) => void, onEnd: () => void, hold?: (resume: () => void) => boolean) {
    super({ decodeStrings: false, highWaterMark: 1 << 20 });
    this.#onEvent = onEvent;
    this.#onEnd = onEnd;
    this.#hold = hold;
  }

  override _write(chunk: string | Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    const text = this.#carry + (typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
    let start = 0;
    for (let at = text.indexOf('\n\n'); at !== -1; at = text.indexOf('\n\n', start)) {
      this.#onEvent(text.slice(start, at + 2));
      start = at + 2;
    }
    this.#carry = start === 0 ? text : text.slice(start);
    if (!this.#hold?.(done)) done();
  }

  override _final(done: (err?: Error | null) => void): void {
    if (this.#carry) this.#onEvent(this.#carry);
    this.#carry = '';
    this.#onEnd();
    done();
  }
}
