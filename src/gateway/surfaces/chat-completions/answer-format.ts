import { HttpProblem } from '../../../platform/errors.ts';
import type { AnswerEvent, AnswerFormat } from '../../cache/answer-formats.ts';
import { eventData } from '../../cache/answer-formats.ts';
import { cacheKey } from '../../cache/cache-key.ts';
import { errorEvent } from '../../providers/error-event.ts';
import { isObject, parseObject } from '../../providers/json.ts';
import { SSE_DONE, sseEvent } from '../../providers/sse.ts';

/**
 * Conversions between the two shapes of an OpenAI answer, so that a cached
 * stream can answer a non-streamed request and the reverse (OpenAI API
 * reference: "The chat completion object", "The chat completion chunk
 * object"). Chunks join field by field: string deltas (content,
 * reasoning_content, refusal and any other) are concatenated, tool calls
 * are merged by their `index`, the last finish_reason wins; a completion is
 * cut into one chunk per choice carrying the whole message, then one with
 * its finish_reason, then the usage-only chunk.
 */

type Json = Record<string, unknown>;

/** Top-level fields a chunk shares with its completion. */
const SHARED = ['id', 'created', 'model', 'service_tier', 'system_fingerprint'] as const;

interface ChoiceAcc {
  message: Json;
  toolCalls: Json[];
  finish: unknown;
  logprobs: unknown[] | undefined;
}

/** A chat.completion (JSON text) from a stream's chunks (data strings) and its usage-only chunk. */
export function chunksToCompletion(chunks: readonly string[], usageChunk: string | undefined): string {
  let head: Json | undefined;
  const choices = new Map<number, ChoiceAcc>();
  for (const data of chunks) {
    const chunk = JSON.parse(data) as Json;
    head ??= chunk;
    if (!Array.isArray(chunk['choices'])) continue;
    for (const choice of chunk['choices'] as Json[]) {
      const index = typeof choice['index'] === 'number' ? choice['index'] : 0;
      let acc = choices.get(index);
      if (!acc) {
        acc = { message: { role: 'assistant', content: null }, toolCalls: [], finish: null, logprobs: undefined };
        choices.set(index, acc);
      }
      mergeDelta(acc, isObject(choice['delta']) ? choice['delta'] : {});
      if (choice['finish_reason'] != null) acc.finish = choice['finish_reason'];
      const logprobs = choice['logprobs'];
      if (isObject(logprobs) && Array.isArray(logprobs['content'])) acc.logprobs = [...(acc.logprobs ?? []), ...logprobs['content']];
    }
  }
  const out: Json = { id: head?.['id'], object: 'chat.completion', created: head?.['created'], model: head?.['model'] };
  out['choices'] = [...choices.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, acc]) => ({
      index,
      message: acc.toolCalls.length ? { ...acc.message, tool_calls: acc.toolCalls } : acc.message,
      logprobs: acc.logprobs ? { content: acc.logprobs } : null,
      finish_reason: acc.finish,
    }));
  const usage = usageChunk === undefined ? undefined : (JSON.parse(usageChunk) as Json)['usage'];
  if (isObject(usage)) {
    const { cost: _cost, ...plain } = usage;
    out['usage'] = plain;
  }
  for (const name of SHARED.slice(3)) if (head?.[name] !== undefined) out[name] = head[name];
  return JSON.stringify(out);
}

function mergeDelta(acc: ChoiceAcc, delta: Json): void {
  const message = acc.message;
  for (const [name, value] of Object.entries(delta)) {
    if (name === 'tool_calls' && Array.isArray(value)) {
      for (const part of value as Json[]) mergeToolCall(acc.toolCalls, part);
    } else if (name === 'function_call' && isObject(value)) {
      const into = isObject(message[name]) ? (message[name] as Json) : {};
      message[name] = into;
      for (const [k, v] of Object.entries(value)) into[k] = typeof v === 'string' ? `${(into[k] as string | undefined) ?? ''}${v}` : v;
    } else if (typeof value === 'string' && name !== 'role') {
      message[name] = typeof message[name] === 'string' ? `${message[name] as string}${value}` : value;
    } else if (value !== null || !(name in message)) {
      message[name] = value;
    }
  }
}

function mergeToolCall(calls: Json[], part: Json): void {
  const index = typeof part['index'] === 'number' ? part['index'] : calls.length;
  let call = calls[index];
  if (!call) {
    call = { id: undefined, type: 'function', function: { name: '', arguments: '' } };
    calls[index] = call;
  }
  if (typeof part['id'] === 'string') call['id'] = part['id'];
  if (typeof part['type'] === 'string') call['type'] = part['type'];
  const fn = part['function'];
  if (isObject(fn)) {
    const into = call['function'] as Json;
    if (typeof fn['name'] === 'string') into['name'] = `${into['name'] as string}${fn['name']}`;
    if (typeof fn['arguments'] === 'string') into['arguments'] = `${into['arguments'] as string}${fn['arguments']}`;
  }
}

/** A completion's chunks (data strings) and usage-only chunk, as a stream of it would have carried them. */
export function completionToChunks(completion: string): { chunks: string[]; usageChunk: string | undefined } {
  const parsed = JSON.parse(completion) as Json;
  const base: Json = {};
  for (const name of SHARED) if (parsed[name] !== undefined) base[name] = parsed[name];
  const chunk = (fields: Json) => JSON.stringify({ id: base['id'], object: 'chat.completion.chunk', ...base, ...fields });
  const chunks: string[] = [];
  const choices = Array.isArray(parsed['choices']) ? (parsed['choices'] as Json[]) : [];
  for (const choice of choices) {
    const message = isObject(choice['message']) ? choice['message'] : {};
    const delta: Json = { ...message };
    if (Array.isArray(message['tool_calls'])) delta['tool_calls'] = (message['tool_calls'] as Json[]).map((call, index) => ({ index, ...call }));
    chunks.push(chunk({ choices: [{ index: choice['index'] ?? 0, delta, logprobs: choice['logprobs'] ?? null, finish_reason: null }] }));
    chunks.push(chunk({ choices: [{ index: choice['index'] ?? 0, delta: {}, logprobs: null, finish_reason: choice['finish_reason'] ?? 'stop' }] }));
  }
  const usage = parsed['usage'];
  return { chunks, usageChunk: isObject(usage) ? chunk({ choices: [], usage }) : undefined };
}

/** The usage-only chunk with `usage.cost` as this client is charged (0 for a reused answer); no cost field when undefined. */
export function withCost(usageChunk: string, cost: number | undefined): string {
  const parsed = JSON.parse(usageChunk) as Json;
  const usage = parsed['usage'];
  if (!isObject(usage)) return usageChunk;
  if (cost === undefined) delete usage['cost'];
  else usage['cost'] = cost;
  return JSON.stringify(parsed);
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
 * Chat Completions answers: a chat.completion, or a stream of
 * chat.completion.chunk events, a usage-only chunk (sent to clients that
 * asked for it, `usage.cost` as charged), `[DONE]`, and errors as
 * `data: {"error": {...}}`.
 */
export const CHAT_COMPLETIONS_ANSWERS: AnswerFormat = {
  name: 'chat.completions',
  cacheKey: (call, target) => cacheKey(call.tenant.tenantId, target, call.body),
  classify: classifyEvent,
  join: chunksToCompletion,
  cut: completionToChunks,
  chunkEvent: (data) => sseEvent(data),
  done: SSE_DONE,
  errorEvent,
  withCost,
};
