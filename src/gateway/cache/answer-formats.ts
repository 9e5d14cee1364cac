import type { HttpProblem } from '../../platform/errors.ts';
import { parseObject } from '../providers/json.ts';
import type { Call } from '../pipeline/call.ts';
import type { SurfaceName } from '../surfaces/surface.ts';

/** What one SSE event of a surface's answer stream is, to the cache and to dedup. */
export type AnswerEvent =
  | { kind: 'chunk'; data: string }
  /** `terminal`: the usage chunk also ends the stream (a Responses stream's response.completed); the format's `done` is then empty. */
  | { kind: 'usage'; data: string; terminal?: boolean }
  | { kind: 'done' }
  | { kind: 'error'; problem: HttpProblem };

/**
 * What the response cache and in-flight dedup need to know of a surface's
 * answers (each surface has one: surfaces/<name>/answer-format.ts), so that
 * cache/ stores, shares and replays any surface's answers alike. An answer
 * is either complete (what a non-streamed call answers: `completion`) or a
 * stream: its chunks (each one event's data, in order), an optional
 * usage-only chunk, then a terminal event. Either form answers either kind
 * of request (`join`, `cut`).
 */
export interface AnswerFormat {
  /** The surface whose answers these are; a stored answer names it (CachedAnswer.format). */
  readonly name: SurfaceName;
  /**
   * The response-cache key of `call` to `target` (`provider/model`): the
   * tenant, the target and every answer-changing part of the request, under
   * a key version of the surface's own, so that two surfaces never share an
   * entry (cache-key.ts).
   */
  cacheKey(call: Call, target: string): string;
  /** Classifies one complete SSE event of the surface's output, as the adapter wrote it. */
  classify(text: string): AnswerEvent;
  /** A stream's chunks and usage chunk joined into the complete answer. */
  join(chunks: readonly string[], usageChunk: string | undefined): string;
  /** A complete answer cut into the chunks (and usage chunk) a stream of it would have carried. */
  cut(completion: string): { chunks: string[]; usageChunk: string | undefined };
  /** The SSE text of one chunk. */
  chunkEvent(data: string): string;
  /** The event that ends a complete stream. */
  readonly done: string;
  /** The event that ends a failed stream. */
  errorEvent(problem: HttpProblem): string;
  /** The usage chunk with the cost this client is charged (undefined: the model has no price). */
  withCost(usageChunk: string, cost: number | undefined): string;
}

/**
 * The names a stored answer's format may have (the in-process store keeps its
 * index in one byte); an `embeddings` entry is one input's vector (surfaces/embeddings/).
 */
export const ANSWER_FORMAT_NAMES: readonly SurfaceName[] = ['chat.completions', 'messages', 'responses', 'embeddings'];

/**
 * An event's `type` when its data opens with it (`{"type":"…"`, as
 * Anthropic's, OpenAI's Responses and the gateway's own events do), read
 * without parsing the rest; undefined otherwise.
 */
export function leadingType(data: string): string | undefined {
  if (!data.startsWith('{"type":"')) return undefined;
  const end = data.indexOf('"', 9);
  if (end === -1 || data.charCodeAt(end - 1) === 92) return undefined;
  return data.slice(9, end);
}

/** An event's `type`: read off the data's start when it opens with it, else parsed. */
export function eventType(data: string): string | undefined {
  const leading = leadingType(data);
  if (leading !== undefined) return leading;
  const type = parseObject(data)?.['type'];
  return typeof type === 'string' ? type : undefined;
}

/**
 * The data of one event (`data:` lines joined with LF, as the SSE standard
 * joins them). The shapes the adapters write, one `data:` line after at most
 * an `event:` line, are sliced out without splitting the text.
 */
export function eventData(text: string): string {
  const end = text.endsWith('\n\n') ? text.length - 2 : text.length;
  const first = text.indexOf('\n');
  if (text.startsWith('data: ') && first === end) return text.slice(6, end);
  if (text.startsWith('event:') && text.startsWith('data: ', first + 1) && text.indexOf('\n', first + 1) === end) return text.slice(first + 7, end);
  return text
    .slice(0, end)
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(line.charCodeAt(5) === 32 ? 6 : 5))
    .join('\n');
}
