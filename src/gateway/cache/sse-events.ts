import { Writable } from 'node:stream';
import { HttpProblem } from '../../platform/errors.ts';
import { isObject, parseObject } from '../providers/json.ts';

/** What one SSE event of an adapter's output (OpenAI chat-completion chunks) is. */
export type AnswerEvent =
  | { kind: 'chunk'; data: string }
  | { kind: 'usage'; data: string }
  | { kind: 'done' }
  | { kind: 'error'; problem: HttpProblem };

/** The data of one event (`data:` lines joined with LF, as the SSE standard joins them). */
function eventData(text: string): string {
  const end = text.endsWith('\n\n') ? text.length - 2 : text.length;
  if (text.startsWith('data: ') && text.indexOf('\n') === end) return text.slice(6, end);
  return text
    .slice(0, end)
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(line.charCodeAt(5) === 32 ? 6 : 5))
    .join('\n');
}

/**
 * Classifies an event the stream translators wrote: [DONE], an error event
 * (`{"error": {...}}`, made back into the problem it reports), the
 * usage-only chunk (`choices: []` and a `usage` object), or a chunk. Only
 * events mentioning "usage" or "error" are parsed.
 */
export function classifyEvent(text: string): AnswerEvent {
  const data = eventData(text);
  if (data === '[DONE]') return { kind: 'done' };
  const maybeUsage = data.includes('"usage"');
  if (!maybeUsage && !data.includes('"error"')) return { kind: 'chunk', data };
  const parsed = parseObject(data);
  if (parsed === undefined) return { kind: 'chunk', data };
  const error = parsed['error'];
  if (isObject(error) && !Array.isArray(parsed['choices'])) {
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    const problem = new HttpProblem(502, str(error['code']) ?? 'upstream_error', str(error['message']) ?? 'The provider failed.', {
      type: str(error['type']) ?? 'api_error',
      ...(str(error['param']) ? { param: str(error['param'])! } : {}),
    });
    return { kind: 'error', problem };
  }
  const choices = parsed['choices'];
  if (maybeUsage && isObject(parsed['usage']) && Array.isArray(choices) && choices.length === 0) return { kind: 'usage', data };
  return { kind: 'chunk', data };
}

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
