import { StringDecoder } from 'node:string_decoder';

/**
 * Server-sent events (text/event-stream), read incrementally and written.
 * Parsing follows the WHATWG HTML standard, section 9.2.6 "Interpreting an
 * event stream": lines end in CRLF, LF or CR (any of them may straddle two
 * chunks); a line starting with ':' is a comment; `field: value` loses one
 * space after the colon; `data` lines are joined with LF; a blank line
 * dispatches the event, unless it has no data; an event left unfinished at
 * the end of the stream is discarded. `id` and `retry` are not needed by a
 * proxy and are ignored.
 *
 * Runs once per upstream chunk on the stream path, so it scans with indexOf
 * (no regex, no array of lines) and hands events to a callback.
 *
 * What it holds is bounded: a line, or an event's data, longer than
 * `maxEventChars` throws SseEventTooLarge (the stream cannot go on: the
 * rest of that event is unknown), so an upstream sending a line that never
 * ends cannot grow the process with it.
 */

/** Called once per dispatched event; `event` is "message" unless the stream named it. */
export type SseListener = (event: string, data: string) => void;

/**
 * The longest line or event data read, in characters (UTF-16 code units,
 * so at most 16 MiB held per parser, twice over for the line being joined).
 * A chat-completion event is a few hundred bytes to a few KB; the largest a
 * provider really sends are whole images in base64 (a 2048 x 2048 PNG is
 * about 6 MB of text), far above the 1 MiB of the cache's entries, hence a
 * bound of its own.
 */
export const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/** A line or an event's data passed the parser's bound. */
export class SseEventTooLarge extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`an SSE line or event over ${limit} characters`);
    this.limit = limit;
  }
}

export class SseParser {
  readonly #decoder = new StringDecoder('utf8');
  readonly #max: number;
  /** The unterminated last line of the text so far. */
  #pending = '';
  /** The previous chunk ended in CR: a LF opening the next one belongs to it. */
  #skipLf = false;
  #started = false;
  #event = '';
  #data = '';
  #hasData = false;

  constructor(maxEventChars = MAX_EVENT_CHARS) {
    this.#max = maxEventChars;
  }

  /** Feeds upstream bytes; UTF-8 sequences split across chunks are held until complete. Throws SseEventTooLarge. */
  push(chunk: Buffer, listener: SseListener): void {
    let text = this.#decoder.write(chunk);
    if (!this.#started && text.length > 0) {
      this.#started = true;
      // The standard strips one leading U+FEFF (BOM).
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    this.#scan(text, listener);
  }

  /** The stream ended: an event without its blank line is discarded, as the standard says. */
  end(listener: SseListener): void {
    this.#scan(this.#decoder.end(), listener);
    this.#pending = '';
    this.#event = '';
    this.#data = '';
    this.#hasData = false;
  }

  #scan(chunk: string, listener: SseListener): void {
    let start = 0;
    if (this.#skipLf && chunk.length > 0) {
      this.#skipLf = false;
      if (chunk.charCodeAt(0) === 10) start = 1;
    }
    let text = chunk;
    if (this.#pending.length > 0) {
      // A long line arriving in many chunks is only rescanned once it is complete.
      if (chunk.indexOf('\n', start) === -1 && chunk.indexOf('\r', start) === -1) {
        this.#pending += chunk.slice(start);
        if (this.#pending.length > this.#max) this.#tooLarge();
        return;
      }
      text = this.#pending + chunk.slice(start);
      start = 0;
      this.#pending = '';
    }
    // Positions of the next LF and CR; CR is rare, so its search is remembered rather than repeated.
    let lf = text.indexOf('\n', start);
    let cr = text.indexOf('\r', start);
    while (lf !== -1 || cr !== -1) {
      let end: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        end = lf;
        next = lf + 1;
      } else if (cr + 1 === text.length) {
        end = cr;
        next = cr + 1;
        this.#skipLf = true;
      } else {
        end = cr;
        next = text.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
      }
      this.#line(text, start, end, listener);
      start = next;
      if (lf !== -1 && lf < start) lf = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
    }
    if (start < text.length) {
      this.#pending = text.slice(start);
      if (this.#pending.length > this.#max) this.#tooLarge();
    }
  }

  /** Drops what is held (the stream cannot go on) and says why. */
  #tooLarge(): never {
    this.#pending = '';
    this.#data = '';
    this.#hasData = false;
    throw new SseEventTooLarge(this.#max);
  }

  #line(text: string, start: number, end: number, listener: SseListener): void {
    if (start === end) {
      // A blank line dispatches the event (WHATWG: only if the data buffer is not empty).
      if (this.#hasData) listener(this.#event === '' ? 'message' : this.#event, this.#data);
      this.#event = '';
      this.#data = '';
      this.#hasData = false;
      return;
    }
    const first = text.charCodeAt(start);
    if (first === 58) return; // ':' a comment
    if (first === 100 && text.startsWith('data', start)) {
      const value = fieldValue(text, start + 4, end);
      if (value === undefined) return;
      this.#data = this.#hasData ? `${this.#data}\n${value}` : value;
      this.#hasData = true;
      if (this.#data.length > this.#max) this.#tooLarge();
      return;
    }
    if (first === 101 && text.startsWith('event', start)) {
      const value = fieldValue(text, start + 5, end);
      if (value !== undefined) this.#event = value;
    }
  }
}

/**
 * The value of a field whose name ends at `at`: after ':' and one optional
 * space; a line that is the name alone has the empty value; undefined when
 * the name continues (e.g. "datafoo:"), which is another field.
 */
function fieldValue(text: string, at: number, end: number): string | undefined {
  if (at === end) return '';
  if (text.charCodeAt(at) !== 58) return undefined;
  const from = text.charCodeAt(at + 1) === 32 ? at + 2 : at + 1;
  return from >= end ? '' : text.slice(from, end);
}

/** One SSE event carrying `data` (split into several data lines if it has line breaks), unnamed unless `event` is given. */
export function sseEvent(data: string, event?: string): string {
  const head = event === undefined ? '' : `event: ${event}\n`;
  if (data.indexOf('\n') === -1 && data.indexOf('\r') === -1) return `${head}data: ${data}\n\n`;
  return `${head}data: ${data.split(/\r\n|\r|\n/).join('\ndata: ')}\n\n`;
}

/** The terminal event of an OpenAI chat-completions stream. */
export const SSE_DONE = 'data: [DONE]\n\n';
