import { openaiErrorBody } from '../../../platform/error-format.ts';
import { leadingType } from '../../cache/answer-formats.ts';
import type { HttpProblem } from '../../../platform/errors.ts';
import { upstreamInvalid } from '../../openai-errors.ts';
import { isObject, type JsonObject, parseObject } from '../../providers/json.ts';
import { openAiErrorFields } from '../../providers/openai-compatible/errors.ts';
import { RelayedStream } from '../../providers/relayed-stream.ts';
import { sseEvent } from '../../providers/sse.ts';
import type { ChatResult, ProviderAdapter, TokenUsage } from '../../providers/types.ts';
import { upstreamHttpError } from '../../providers/upstream-errors.ts';
import { joinPath } from '../../providers/upstream-path.ts';
import { responsesUsage } from './usage.ts';

/**
 * What the client asked that the stateless upstream call does not say: the
 * gateway keeps the state, so OpenAI is sent `store: false` and the whole
 * input, and the response objects the client gets say what the client
 * asked for (`store`, `previous_response_id`) rather than what was sent.
 */
export interface ResponseEcho {
  /** Undefined: the client sent the request upstream as it was (its own `store: false`): nothing is rewritten. */
  store: boolean | undefined;
  previousResponseId: string | null;
}

/** The terminal events of a Responses stream that carry the whole response (usage included). */
const FINAL = new Set(['response.completed', 'response.incomplete']);
/** The events that start a stream, carrying the response in progress. */
const STARTS = new Set(['response.created', 'response.in_progress', 'response.queued']);
/** Events carrying the response object whose echo is rewritten. */
const WITH_RESPONSE = new Set(['response.created', 'response.in_progress', 'response.queued', 'response.completed', 'response.incomplete', 'response.failed']);

/**
 * Responses to OpenAI: `body` is what goes upstream (the client's request,
 * or, with state kept by the gateway, its expansion: see surface.ts), with
 * only `model` set to the target's id (in its place) and the prompt-cache
 * plan's key as `prompt_cache_key` when the client set none. The answer is
 * OpenAI's: a response relayed as its bytes unless its echo is rewritten, a
 * stream relayed event by event (ResponsesRelay); `onResponse` is handed the
 * complete response object (what the gateway stores).
 */
export function responsesPassthrough(
  provider: string,
  body: JsonObject,
  echo: ResponseEcho,
  base: ProviderAdapter,
  onResponse: (response: JsonObject) => void,
): ProviderAdapter {
  // One serialization per model and key: a retry or a fallback to the same model sends the same bytes.
  let sent: { model: string; key: string | undefined; text: string } | undefined;
  return {
    modelsRequest: (ctx) => base.modelsRequest(ctx),
    chatRequest(_stagesForm, ctx) {
      const key = body['prompt_cache_key'] === undefined ? ctx.promptCache?.key : undefined;
      if (sent?.model !== ctx.model || sent.key !== key) {
        const out: JsonObject = body['model'] === ctx.model ? { ...body } : { ...body, model: ctx.model };
        if (key !== undefined) out['prompt_cache_key'] = key;
        sent = { model: ctx.model, key, text: JSON.stringify(out) };
      }
      return {
        path: joinPath(ctx.baseUrl, '/responses'),
        headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
        body: sent.text,
      };
    },
    chatResponse(_status, answer): ChatResult {
      const text = answer.toString('utf8');
      const parsed = parseObject(text);
      if (parsed === undefined || parsed['object'] !== 'response') throw upstreamInvalid(provider);
      const model = parsed['model'];
      const rewritten = rewriteEcho(parsed, echo);
      onResponse(parsed);
      return { body: rewritten ? JSON.stringify(parsed) : text, usage: responsesUsage(parsed['usage']), model: typeof model === 'string' ? model : undefined };
    },
    chatStream: (_ctx, options) => new ResponsesRelay(provider, echo, options.cost, onResponse),
    upstreamError: (status, answer, headers) => base.upstreamError(status, answer, headers),
  };
}

/** Sets the response's `store` and `previous_response_id` to what the client asked; true when that changed it. */
export function rewriteEcho(response: JsonObject, echo: ResponseEcho): boolean {
  if (echo.store === undefined) return false;
  let changed = false;
  if (response['store'] !== echo.store) {
    response['store'] = echo.store;
    changed = true;
  }
  if ((response['previous_response_id'] ?? null) !== echo.previousResponseId) {
    response['previous_response_id'] = echo.previousResponseId;
    changed = true;
  }
  return changed;
}

/**
 * The events a Responses stream ends with when the gateway fails it: an
 * `error` event (Streaming events, "error": code, message, param, and the
 * same as an `error` object, which the openai SDKs raise as an APIError),
 * then, when the response is known, `response.failed` with its `error`
 * (what Codex reads), numbered from `sequenceNumber` (events.ts writes the
 * same for a translated stream).
 */
export function responsesErrorEvent(problem: HttpProblem, sequenceNumber: number, response?: JsonObject): string {
  const error = openaiErrorBody(problem).error;
  const data = { type: 'error', code: error.code, message: error.message, param: error.param, error, sequence_number: sequenceNumber };
  const text = sseEvent(JSON.stringify(data), 'error');
  return response === undefined ? text : text + failedEvent(problem, sequenceNumber + 1, response);
}

/** `response.failed` for `response`, with the problem as its `error`. */
function failedEvent(problem: HttpProblem, sequenceNumber: number, response: JsonObject): string {
  const error = openaiErrorBody(problem).error;
  const failed = { ...response, status: 'failed', error: { code: error.code, message: error.message } };
  return sseEvent(JSON.stringify({ type: 'response.failed', response: failed, sequence_number: sequenceNumber }), 'response.failed');
}

/**
 * An OpenAI Responses stream relayed event by event: every event's name and
 * data as they came (deltas of every kind, reasoning and its summaries,
 * built-in tools' progress, event types that do not exist yet), except the
 * events that carry the response object, whose echo is rewritten
 * (rewriteEcho) and whose final usage gets the gateway's `cost`, as Chat
 * Completions' usage chunk does. Read for usage and the model. An upstream
 * `error` event is relayed as it came, and the `response.failed` after it
 * ends the stream (written by the gateway when the upstream ends without
 * one); a failure of the gateway's own ends it with an `error` event and
 * `response.failed`, numbered after the last event relayed.
 */
export class ResponsesRelay extends RelayedStream {
  readonly #echo: ResponseEcho;
  readonly #cost: (usage: TokenUsage) => number | undefined;
  readonly #onResponse: (response: JsonObject) => void;
  #lastSequence = -1;
  /** The response as response.created (or in_progress) gave it: what response.failed says failed. */
  #response: JsonObject | undefined;
  /** The data of response.created (or in_progress) when it was relayed unparsed. */
  #startData: string | undefined;
  /** An upstream `error` event relayed, waiting for its response.failed. */
  #upstreamError: HttpProblem | undefined;

  constructor(provider: string, echo: ResponseEcho, cost: (usage: TokenUsage) => number | undefined, onResponse: (response: JsonObject) => void) {
    super(provider);
    this.#echo = echo;
    this.#cost = cost;
    this.#onResponse = onResponse;
  }

  protected readonly onEvent = (_event: string, data: string): void => {
    if (this.finished || data === '') return;
    // Most events are deltas and item progress: relayed without parsing them (as Chat Completions' chunks are), read
    // only for their number and, for a delta, its size (a stream whose usage never comes is estimated from it).
    const quick = leadingType(data);
    if (quick !== undefined && this.#echo.store === undefined && STARTS.has(quick)) {
      // Nothing to rewrite in it: kept as it came, parsed only if the stream fails (response.failed names it).
      this.#startData = data;
      this.out += sseEvent(data, quick);
      const sequence = sequenceOf(data);
      if (sequence !== undefined) this.#lastSequence = sequence;
      return;
    }
    if (quick !== undefined && quick !== 'error' && !WITH_RESPONSE.has(quick)) {
      this.out += sseEvent(data, quick);
      const sequence = sequenceOf(data);
      if (sequence !== undefined) this.#lastSequence = sequence;
      if (quick.endsWith('.delta')) this.generated(deltaOf(data));
      return;
    }
    const parsed = parseObject(data);
    const type = parsed?.['type'];
    if (parsed === undefined || typeof type !== 'string') {
      this.stop(upstreamInvalid(this.provider));
      return;
    }
    const sequence = parsed['sequence_number'];
    if (typeof sequence === 'number') this.#lastSequence = sequence;
    if (type === 'error') {
      const inner = isObject(parsed['error']) ? parsed['error'] : parsed;
      this.#upstreamError ??= upstreamHttpError(this.provider, 502, openAiErrorFields({ error: inner }), {});
      this.out += sseEvent(data, 'error');
      return;
    }
    const response = WITH_RESPONSE.has(type) && isObject(parsed['response']) ? parsed['response'] : undefined;
    if (response === undefined) {
      this.out += sseEvent(data, type);
      if (type.endsWith('.delta')) this.generated(parsed['delta']);
      return;
    }
    if (typeof response['model'] === 'string') this.reportedModel = response['model'];
    let rewritten = rewriteEcho(response, this.#echo);
    if (type === 'response.failed') {
      const error = isObject(response['error']) ? response['error'] : {};
      const problem = this.#upstreamError ?? upstreamHttpError(this.provider, 502, openAiErrorFields({ error }), {});
      this.stop(problem, sseEvent(rewritten ? JSON.stringify(parsed) : data, type));
      return;
    }
    if (STARTS.has(type)) this.#response = response;
    if (FINAL.has(type)) {
      if (this.#response === undefined && this.#startData === undefined) {
        this.stop(upstreamInvalid(this.provider));
        return;
      }
      const usage = responsesUsage(response['usage']);
      this.reportedUsage = usage;
      this.usageFinal = usage !== undefined;
      const cost = usage === undefined ? undefined : this.#cost(usage);
      if (cost !== undefined && isObject(response['usage'])) {
        response['usage']['cost'] = cost;
        rewritten = true;
      }
      this.finished = true;
      this.#onResponse(response);
    }
    this.out += sseEvent(rewritten ? JSON.stringify(parsed) : data, type);
  };

  override end(): string {
    // The upstream's error event came, its response.failed did not: the gateway writes the one it would have sent.
    const upstream = this.#upstreamError;
    if (!this.finished && upstream !== undefined) {
      try {
        this.parser.end(this.onEvent);
      } catch {
        // An event over the bound: the stream ends with the upstream's error all the same.
      }
    }
    if (!this.finished && upstream !== undefined) {
      const started = this.#started();
      const ended = started === undefined ? '' : failedEvent(upstream, this.#lastSequence + 1, started);
      this.stop(upstream, ended);
    }
    return super.end();
  }

  protected override errorText(error: HttpProblem): string {
    return responsesErrorEvent(error, this.#lastSequence + 1, this.#started());
  }

  /** The response as the stream's start gave it, if it started. */
  #started(): JsonObject | undefined {
    if (this.#response === undefined && this.#startData !== undefined) {
      const response = parseObject(this.#startData)?.['response'];
      if (isObject(response)) this.#response = response;
    }
    return this.#response;
  }
}

const SEQUENCE = '"sequence_number":';

/** The event's sequence_number, read where OpenAI writes it (near the start), without parsing the rest. */
function sequenceOf(data: string): number | undefined {
  const at = data.indexOf(SEQUENCE);
  if (at === -1 || at > 128) return undefined;
  let n = 0;
  let i = at + SEQUENCE.length;
  const start = i;
  for (; i < data.length && i < start + 15; i++) {
    const c = data.charCodeAt(i);
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  return i > start ? n : undefined;
}

/** A delta event's generated text, about: from its `delta` field to the end (escapes and later fields count a little more). */
function deltaOf(data: string): string {
  const at = data.indexOf('"delta":"');
  return at === -1 ? '' : data.slice(at + 9, Math.max(at + 9, data.length - 2));
}
