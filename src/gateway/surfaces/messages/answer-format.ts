import type { IncomingHttpHeaders } from 'node:http';
import type { AnswerEvent, AnswerFormat } from '../../cache/answer-formats.ts';
import { eventData, eventType as typeOf } from '../../cache/answer-formats.ts';
import { answerKey, keyedFields } from '../../cache/cache-key.ts';
import { embeddedError } from '../../providers/anthropic/errors.ts';
import { isObject, type JsonObject, parseObject } from '../../providers/json.ts';
import { sseEvent } from '../../providers/sse.ts';
import { anthropicErrorEvent } from './passthrough.ts';

/** The format of a Messages key: bumped whenever what goes into it, or how, changes (as cache-key.ts's). */
export const MESSAGES_KEY_VERSION = 'messages/v1';

/** Body fields that cannot change the answer (as for Chat Completions: the key names the routed model instead of `model`). */
const IGNORED = new Set(['model', 'stream', 'metadata']);

/** The event that ends a complete Messages stream. */
const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

const DONE: AnswerEvent = { kind: 'done' };

/**
 * Anthropic Messages answers (Messages API, "Streaming messages"): a
 * message, or a stream of named events whose data carries the same name as
 * its `type`. A chunk is one event's data as the client was sent it
 * (message_start, content blocks and their deltas of every kind, thinking
 * and signature deltas included, message_delta, ping, and event types that
 * do not exist yet), replayed as `event: <type>` with that data, so a
 * replayed stream is the event sequence that was sent, chunk for chunk;
 * message_stop is the terminal event. There is no usage chunk: usage
 * travels in message_start and message_delta, and a reused answer shows the
 * usage it was made with (what is billed is the usage record's to say).
 */
export const MESSAGES_ANSWERS: AnswerFormat = {
  name: 'messages',
  cacheKey: messagesCacheKey,
  classify(text) {
    const data = eventData(text);
    const type = typeOf(data);
    if (type === 'message_stop') return DONE;
    if (type === 'error') return { kind: 'error', problem: embeddedError('provider', parseObject(data) ?? {}) };
    return { kind: 'chunk', data };
  },
  join: (chunks) => eventsToMessage(chunks),
  cut: (completion) => ({ chunks: messageToEvents(completion), usageChunk: undefined }),
  chunkEvent(data) {
    const type = typeOf(data);
    return type === undefined ? sseEvent(data) : sseEvent(data, type);
  },
  done: MESSAGE_STOP,
  errorEvent: anthropicErrorEvent,
  // No usage chunk is ever recorded for this format.
  withCost: (usageChunk) => usageChunk,
};

/**
 * The key of a Messages call: its body as sent, after compaction (every field but
 * IGNORED: thinking blocks and their signatures, cache_control, tools,
 * fields the gateway does not know), not the Chat Completions form the
 * stages read, which drops what a translation cannot carry; and the
 * headers that change what Anthropic answers: `anthropic-beta` (its flags
 * sorted, so their order does not matter) and `anthropic-version`.
 */
function messagesCacheKey(call: Parameters<AnswerFormat['cacheKey']>[0], target: string): string {
  // As compaction left it: two calls share an answer only if the provider was asked the same thing.
  const body = call.surface.sent?.() ?? call.surface.request ?? call.body;
  const headers = `anthropic-beta:${betaFlags(call.headers['anthropic-beta'])}\nanthropic-version:${headerValue(call.headers['anthropic-version'])}`;
  return answerKey(MESSAGES_KEY_VERSION, call.tenant.tenantId, target, keyedFields(body, IGNORED), headers);
}

function headerValue(value: IncomingHttpHeaders[string]): string {
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

/** The beta flags, trimmed and sorted, comma-separated (several headers as one). */
function betaFlags(value: IncomingHttpHeaders[string]): string {
  const flags = headerValue(value)
    .split(',')
    .map((flag) => flag.trim())
    .filter((flag) => flag !== '');
  return flags.sort().join(',');
}

interface OpenBlock {
  block: JsonObject;
  /** A tool-use block's input_json_delta pieces, joined (parsed into `input` at its content_block_stop). */
  json: string | undefined;
}

/**
 * A stream's events (data strings) joined into the message they build, as
 * the SDKs accumulate it: message_start's message, each content block from
 * its content_block_start by `index`, its deltas applied (text_delta,
 * thinking_delta, signature_delta and any other delta's string fields
 * appended, citations_delta's citation added to `citations`,
 * input_json_delta's partial_json joined and parsed into `input` at the
 * block's stop), message_delta's fields (stop_reason, stop_sequence, ...)
 * and usage counts set. ping and event types it does not know add nothing.
 */
export function eventsToMessage(chunks: readonly string[]): string {
  let message: JsonObject = { type: 'message', role: 'assistant' };
  let content: unknown[] = [];
  const blocks = new Map<number, OpenBlock>();
  for (const data of chunks) {
    const event = parseObject(data);
    if (event === undefined) continue;
    const index = event['index'];
    switch (event['type']) {
      case 'message_start': {
        const start = event['message'];
        if (!isObject(start)) break;
        message = { ...start };
        content = Array.isArray(start['content']) ? [...start['content']] : [];
        break;
      }
      case 'content_block_start': {
        const block = event['content_block'];
        if (typeof index !== 'number' || !isObject(block)) break;
        const open: OpenBlock = { block: { ...block }, json: undefined };
        blocks.set(index, open);
        content.push(open.block);
        break;
      }
      case 'content_block_delta': {
        const open = typeof index === 'number' ? blocks.get(index) : undefined;
        const delta = event['delta'];
        if (open && isObject(delta)) applyDelta(open, delta);
        break;
      }
      case 'content_block_stop': {
        const open = typeof index === 'number' ? blocks.get(index) : undefined;
        if (open?.json === undefined) break;
        try {
          open.block['input'] = JSON.parse(open.json);
        } catch {
          // Arguments that do not parse stay as the block started (the client streaming them would fail alike).
        }
        open.json = undefined;
        break;
      }
      case 'message_delta': {
        const delta = event['delta'];
        if (isObject(delta)) for (const [name, value] of Object.entries(delta)) message[name] = value;
        const usage = event['usage'];
        if (isObject(usage)) {
          const merged: JsonObject = isObject(message['usage']) ? { ...message['usage'] } : {};
          // Cumulative counts: each one given replaces the start's (null: not reported here).
          for (const [name, value] of Object.entries(usage)) if (value !== null) merged[name] = value;
          message['usage'] = merged;
        }
        break;
      }
    }
  }
  message['content'] = content;
  return JSON.stringify(message);
}

function applyDelta(open: OpenBlock, delta: JsonObject): void {
  const block = open.block;
  if (delta['type'] === 'input_json_delta') {
    const part = delta['partial_json'];
    if (typeof part === 'string') open.json = (open.json ?? '') + part;
    return;
  }
  if (delta['type'] === 'citations_delta') {
    const citations = Array.isArray(block['citations']) ? block['citations'] : [];
    citations.push(delta['citation']);
    block['citations'] = citations;
    return;
  }
  for (const [name, value] of Object.entries(delta)) {
    if (name === 'type') continue;
    const had = block[name];
    block[name] = typeof value === 'string' && typeof had === 'string' ? had + value : value;
  }
}

/**
 * A message cut into the events (data strings) a stream of it carries,
 * message_stop left to the terminal event: message_start (the message with
 * no content, no stop reason yet, and its usage), then per content block
 * its content_block_start (the block without its text, thinking, signature
 * or input), one delta with the whole text (text_delta, then a
 * citations_delta per citation), thinking (thinking_delta, then
 * signature_delta) or input (input_json_delta), and content_block_stop;
 * then message_delta with the stop reason, stop sequence and usage. A block
 * of another type (redacted_thinking, server tool results, types that do
 * not exist yet) is carried whole in its content_block_start.
 */
export function messageToEvents(completion: string): string[] {
  const message = parseObject(completion) ?? {};
  const blocks = Array.isArray(message['content']) ? message['content'] : [];
  const start: JsonObject = { ...message, content: [] };
  const delta: JsonObject = {};
  for (const name of ['stop_reason', 'stop_sequence']) {
    if (!(name in message)) continue;
    start[name] = null;
    delta[name] = message[name];
  }
  const events = [JSON.stringify({ type: 'message_start', message: start })];
  let index = 0;
  for (const block of blocks) {
    if (!isObject(block)) continue;
    const { head, deltas } = blockEvents(block);
    events.push(JSON.stringify({ type: 'content_block_start', index, content_block: head }));
    for (const d of deltas) events.push(JSON.stringify({ type: 'content_block_delta', index, delta: d }));
    events.push(JSON.stringify({ type: 'content_block_stop', index }));
    index++;
  }
  events.push(JSON.stringify({ type: 'message_delta', delta, usage: isObject(message['usage']) ? message['usage'] : {} }));
  return events;
}

function blockEvents(block: JsonObject): { head: JsonObject; deltas: JsonObject[] } {
  const deltas: JsonObject[] = [];
  const type = block['type'];
  if (type === 'text' && typeof block['text'] === 'string') {
    const head: JsonObject = { ...block, text: '' };
    if (block['text'] !== '') deltas.push({ type: 'text_delta', text: block['text'] });
    const citations = block['citations'];
    if (Array.isArray(citations)) {
      head['citations'] = [];
      for (const citation of citations) deltas.push({ type: 'citations_delta', citation });
    }
    return { head, deltas };
  }
  if (type === 'thinking' && typeof block['thinking'] === 'string') {
    const signature = block['signature'];
    if (block['thinking'] !== '') deltas.push({ type: 'thinking_delta', thinking: block['thinking'] });
    if (typeof signature === 'string' && signature !== '') deltas.push({ type: 'signature_delta', signature });
    return { head: { ...block, thinking: '', ...(typeof signature === 'string' ? { signature: '' } : {}) }, deltas };
  }
  if (isObject(block['input'])) {
    const json = JSON.stringify(block['input']);
    if (json !== '{}') deltas.push({ type: 'input_json_delta', partial_json: json });
    return { head: { ...block, input: {} }, deltas };
  }
  return { head: block, deltas };
}
