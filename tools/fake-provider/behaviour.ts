import type { IncomingHttpHeaders } from 'node:http';
import type { AgentScript } from './anthropic-agent.ts';

/**
 * What the fake provider does with a request: how long it waits, what it
 * answers, which tokens it reports and which fault it plays. One server-wide
 * behaviour, optionally overridden for the next N requests (setBehaviour's
 * scope), then per request by `x-fake-*` headers (see HEADERS below).
 */

/**
 * - `401`, `429`, `500`, `529`: that status with the format's real error body
 *   (429 with Retry-After; 529 is Anthropic's overloaded_error, sent as-is to
 *   OpenAI-format callers too).
 * - `hang`: never answers (for timeout tests); the connection stays open until
 *   the client gives up or the server closes.
 * - `drop`: streams: the socket is destroyed after `faultAfterChunks` content
 *   deltas; non-streamed: after the headers and half the body.
 * - `stream-error`: streams: an error event after `faultAfterChunks` content
 *   deltas (OpenAI `data: {"error": ...}`, Anthropic `event: error` with an
 *   overloaded_error), then the end, no [DONE] / message_stop. Non-streamed
 *   requests get the status a provider sends for the same failure (OpenAI 500,
 *   Anthropic 529).
 * - `garbage`: non-streamed: 200 with a truncated JSON body; streams: one
 *   valid event, then a `data:` line that is not JSON, then the end.
 */
export const FAULTS = ['401', '429', '500', '529', 'hang', 'drop', 'stream-error', 'garbage'] as const;
export type Fault = (typeof FAULTS)[number];

export interface Behaviour {
  /** Wait before sending the status line and headers, in ms. */
  latencyMs: number;
  /** Wait between two SSE events of a stream, in ms (0: the whole stream in one write). */
  chunkDelayMs: number;
  /** How many content deltas a streamed text is split into; unset: one per word. */
  chunks?: number;
  /** The answer text; unset: `echo: <the last user text>`. */
  text?: string;
  /** OpenAI format only: reasoning sent before the answer as `reasoning_content` (DeepSeek's field): in the message, or as stream deltas (one per word). */
  reasoning?: string;
  /** Reported input tokens (OpenAI prompt_tokens, cached ones included; Anthropic input_tokens, cache reads and writes excluded); unset: about a quarter of the request's text length. */
  promptTokens?: number;
  /** Reported output tokens; unset: the number of words of the answer (for a tool call: 10). */
  completionTokens?: number;
  /** OpenAI prompt_tokens_details.cached_tokens; Anthropic cache_read_input_tokens. */
  cachedTokens: number;
  /** Anthropic cache_creation_input_tokens (OpenAI has no such field). */
  cacheCreationTokens: number;
  /** OpenAI completion_tokens_details.reasoning_tokens (a part of completion_tokens). */
  reasoningTokens: number;
  /**
   * Fields written over the `usage` object the answer reports, as given, in
   * the format's own names (OpenAI `prompt_tokens`, Anthropic `input_tokens`;
   * Anthropic streams: in message_start and message_delta alike), to play a
   * provider reporting nonsense: `{prompt_tokens: 1e308}`, -1, 2.5, "12".
   */
  usageFields?: Record<string, unknown>;
  fault?: Fault;
  /** Content deltas sent before a `drop` or `stream-error` fault strikes. */
  faultAfterChunks: number;
  /** The Retry-After header of a 429, in seconds. */
  retryAfterS: number;
  /**
   * Simulate the providers' prompt caches (prompt-cache-anthropic.ts,
   * prompt-cache-openai.ts): prompt tokens are then counted with
   * gpt-tokenizer, and cache reads and writes follow from what earlier
   * requests cached; `promptTokens`, `cachedTokens` and `cacheCreationTokens`
   * are not used. Off by default.
   */
  promptCache: boolean;
  /** Streams only: a flood of bytes in place of the answer's deltas (memory tests; see Flood). */
  flood?: Flood;
  /**
   * Anthropic Messages and OpenAI Responses: a scripted agent turn
   * (anthropic-agent.ts, responses-agent.ts): a call of `tool` with `input`
   * while the last user message has no tool_result (Responses: no
   * function_call_output follows it), then a text answer quoting the tool
   * results.
   */
  agent?: AgentScript;
  /**
   * Anthropic Messages: the thinking text of answers to requests that turn
   * thinking on (any `thinking.type` but `disabled`), in a block signed by
   * the fake; while set, thinking blocks sent back are checked (a changed
   * text or signature, or a signed block dropped before its tool_use: 400).
   * OpenAI Responses: a reasoning item before the answer for requests with a
   * `reasoning` object (the text as its summary when `reasoning.summary` is
   * set; encrypted_content sealed by the fake when `include` asks for it);
   * while set, encrypted_content sent back is checked (400
   * invalid_encrypted_content). Unset (default): no thinking, nothing checked.
   */
  thinking?: string;
}

/**
 * A streamed answer of any size, made as it is sent (the fake holds one
 * piece, never the whole), as fast as the client reads it: after the
 * stream's head, `bytes` bytes (about: whole pieces) shaped as
 * - `deltas` (default): content deltas of `pieceBytes` characters each, in the format's own events;
 * - `line`: one `data:` line that never ends (no line break at all);
 * - `event`: one event of `data:` lines of `pieceBytes` characters, never dispatched (no blank line);
 * then `end`: `done` (default: the format's tail, [DONE] or message_stop), `cut` (the body ends there),
 * or `idle` (the connection stays open and silent until the client leaves or the fake closes).
 * `head: false` leaves out the stream's head (the flood is the first thing sent).
 */
export interface Flood {
  bytes: number;
  head?: boolean;
  shape?: 'deltas' | 'line' | 'event';
  /** Default 4096. */
  pieceBytes?: number;
  end?: 'done' | 'cut' | 'idle';
}

export const DEFAULT_BEHAVIOUR: Behaviour = {
  latencyMs: 0,
  chunkDelayMs: 0,
  cachedTokens: 0,
  cacheCreationTokens: 0,
  reasoningTokens: 0,
  faultAfterChunks: 1,
  retryAfterS: 1,
  promptCache: false,
};

/** Per-request overrides, read only when present. The gateway does not forward unknown headers: tests of it use setBehaviour. */
export const HEADERS = {
  fault: 'x-fake-fault',
  latencyMs: 'x-fake-latency-ms',
  chunkDelayMs: 'x-fake-chunk-delay-ms',
  chunks: 'x-fake-chunks',
  faultAfterChunks: 'x-fake-fault-after-chunks',
  text: 'x-fake-text',
} as const;

const NUMERIC = ['latencyMs', 'chunkDelayMs', 'chunks', 'faultAfterChunks'] as const;

/** `base` with the request's x-fake-* headers applied; the same object when there are none. */
export function withHeaders(base: Behaviour, headers: IncomingHttpHeaders): Behaviour {
  let out = base;
  const fault = headers[HEADERS.fault];
  if (typeof fault === 'string') {
    if (!(FAULTS as readonly string[]).includes(fault)) throw new Error(`${HEADERS.fault}: unknown fault "${fault}"; faults: ${FAULTS.join(', ')}`);
    out = { ...out, fault: fault as Fault };
  }
  for (const key of NUMERIC) {
    const value = headers[HEADERS[key]];
    if (typeof value !== 'string') continue;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${HEADERS[key]}: expected a whole number, got "${value}"`);
    out = { ...out, [key]: n };
  }
  const text = headers[HEADERS.text];
  if (typeof text === 'string') out = { ...out, text };
  return out;
}

/** The server-wide behaviour and a queue of behaviours scoped to the next N requests. */
export class Behaviours {
  #base: Behaviour;
  #scoped: { patch: Partial<Behaviour>; left: number }[] = [];
  readonly #initial: Behaviour;

  constructor(initial: Partial<Behaviour>) {
    this.#initial = { ...DEFAULT_BEHAVIOUR, ...initial };
    this.#base = this.#initial;
  }

  /** Without `requests`: changes the server-wide behaviour. With it: the next `requests` requests behave so, then the queue moves on. */
  set(patch: Partial<Behaviour>, scope?: { requests: number }): void {
    if (scope === undefined) {
      this.#base = { ...this.#base, ...patch };
      return;
    }
    if (!Number.isInteger(scope.requests) || scope.requests < 1) throw new Error('setBehaviour: requests must be a whole number >= 1');
    this.#scoped.push({ patch, left: scope.requests });
  }

  /** The behaviour of the next model request (consumes one use of a scoped behaviour). */
  take(): Behaviour {
    const head = this.#scoped[0];
    if (head === undefined) return this.#base;
    if (--head.left === 0) this.#scoped.shift();
    return { ...this.#base, ...head.patch };
  }

  reset(): void {
    this.#base = this.#initial;
    this.#scoped = [];
  }
}
