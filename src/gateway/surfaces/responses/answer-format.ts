import type { AnswerEvent, AnswerFormat } from '../../cache/answer-formats.ts';
import { eventData, eventType as typeOf } from '../../cache/answer-formats.ts';
import { answerKey, keyedFields } from '../../cache/cache-key.ts';
import { isObject, parseObject } from '../../providers/json.ts';
import { openAiErrorFields } from '../../providers/openai-compatible/errors.ts';
import { sseEvent } from '../../providers/sse.ts';
import { upstreamHttpError } from '../../providers/upstream-errors.ts';
import { eventsOfResponse } from './events.ts';
import { responsesErrorEvent } from './passthrough.ts';

/** The format of a Responses key: bumped whenever what goes into it, or how, changes (as cache-key.ts's). */
export const RESPONSES_KEY_VERSION = 'responses/v1';

/**
 * Body fields that cannot change the answer: the key names the routed model
 * instead of `model`; `previous_response_id` is replaced by the input it
 * stands for (the key is on the expansion); whether the answer is stored,
 * the end user, labels and the prompt-cache key change nothing in it.
 */
const IGNORED = new Set(['model', 'stream', 'stream_options', 'metadata', 'user', 'safety_identifier', 'store', 'previous_response_id', 'prompt_cache_key', 'client_metadata', 'background']);

/** Terminal event types that carry the complete response (the usage chunk, which ends the stream). */
const FINAL = new Set(['response.completed', 'response.incomplete']);

/**
 * OpenAI Responses answers (API reference, "Streaming events"): a response
 * object, or a stream of named events whose data carries the same `type`.
 * A chunk is one event's data as the client was sent it, replayed as
 * `event: <type>` with that data; the usage chunk is the terminal
 * response.completed (or response.incomplete), which carries the whole
 * response, its usage and the gateway's cost, and ends the stream: there is
 * no other terminal event (`done` is empty). A reused answer keeps the ids
 * and sequence numbers it was made with.
 */
export const RESPONSES_ANSWERS: AnswerFormat = {
  name: 'responses',
  cacheKey(call, target) {
    const body = call.surface.sent?.() ?? call.surface.request ?? call.body;
    return answerKey(RESPONSES_KEY_VERSION, call.tenant.tenantId, target, keyedFields(body, IGNORED));
  },
  classify(text): AnswerEvent {
    const data = eventData(text);
    const type = typeOf(data);
    if (type !== undefined && FINAL.has(type)) return { kind: 'usage', data, terminal: true };
    if (type === 'error' || type === 'response.failed') {
      const parsed = parseObject(data) ?? {};
      const error = type === 'error' ? parsed : isObject(parsed['response']) && isObject(parsed['response']['error']) ? parsed['response']['error'] : {};
      return { kind: 'error', problem: upstreamHttpError('provider', 502, openAiErrorFields({ error }), {}) };
    }
    return { kind: 'chunk', data };
  },
  join: (_chunks, usageChunk) => {
    const response = usageChunk === undefined ? undefined : parseObject(usageChunk)?.['response'];
    if (!isObject(response)) return '{}';
    const usage = response['usage'];
    if (isObject(usage) && 'cost' in usage) {
      const { cost: _cost, ...plain } = usage;
      return JSON.stringify({ ...response, usage: plain });
    }
    return JSON.stringify(response);
  },
  cut(completion) {
    const response = parseObject(completion) ?? {};
    const events = eventsOfResponse(response);
    const last = events.pop();
    return { chunks: events, usageChunk: last };
  },
  chunkEvent(data) {
    const type = typeOf(data);
    return type === undefined ? sseEvent(data) : sseEvent(data, type);
  },
  done: '',
  // A dedup or cache replay's own failure: the number is unknown there; clients do not check it.
  errorEvent: (problem) => responsesErrorEvent(problem, 0),
  withCost(usageChunk, cost) {
    const event = parseObject(usageChunk);
    const response = event?.['response'];
    if (!isObject(response) || !isObject(response['usage'])) return usageChunk;
    if (cost === undefined) delete response['usage']['cost'];
    else response['usage']['cost'] = cost;
    return JSON.stringify(event);
  },
};
