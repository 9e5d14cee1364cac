import type { openaiErrorBody } from '../../../platform/error-format.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import { sseEvent } from '../../providers/sse.ts';
import { outputTextPart, refusalPart, summaryPart } from './from-chat.ts';

/** `{message, type, code, param}`: the error object of OpenAI's error body. */
export type OpenAiError = ReturnType<typeof openaiErrorBody>['error'];

/**
 * The Responses API's stream events (API reference, "Streaming events"), one
 * method each, numbered by `sequence_number` from 0 in the order they are
 * made. Each returns the event as SSE text, `event: <type>\ndata: <json>\n\n`
 * as OpenAI sends them (or, with format "data", the JSON alone). The data
 * starts with `type` and `sequence_number`, then the fields in the order of
 * OpenAI's reference. Used by the synthesized stream (stream-from-chat.ts)
 * and to replay a complete response (eventsOfResponse), so both write the
 * same events.
 */
export class ResponseEvents {
  #sequence = 0;
  readonly #sse: boolean;

  constructor(format: 'sse' | 'data' = 'sse') {
    this.#sse = format === 'sse';
  }

  /** How many events were made. */
  get count(): number {
    return this.#sequence;
  }

  created(response: JsonObject): string {
    return this.#event('response.created', { response });
  }
  inProgress(response: JsonObject): string {
    return this.#event('response.in_progress', { response });
  }
  /** response.completed, response.incomplete or response.failed, by the response's status. */
  end(response: JsonObject): string {
    const status = response['status'];
    const type = status === 'incomplete' ? 'response.incomplete' : status === 'failed' ? 'response.failed' : 'response.completed';
    return this.#event(type, { response });
  }

  /**
   * The `error` event of a failed stream: OpenAI's documented fields (code,
   * message, param) and the same as an `error` object, which OpenAI's
   * servers send too and the openai SDK's stream reads: it raises an
   * APIError for an event whose data has `error` (openai 6.x rejects
   * `finalResponse()` with the bare event when only the flat fields are there).
   * `error` is OpenAI's error object (openaiErrorBody's).
   */
  error(error: OpenAiError): string {
    return this.#event('error', { code: error.code, message: error.message, param: error.param, error });
  }

  itemAdded(outputIndex: number, item: JsonObject): string {
    return this.#event('response.output_item.added', { output_index: outputIndex, item });
  }
  itemDone(outputIndex: number, item: JsonObject): string {
    return this.#event('response.output_item.done', { output_index: outputIndex, item });
  }

  partAdded(itemId: string, outputIndex: number, contentIndex: number, part: JsonObject): string {
    return this.#event('response.content_part.added', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, part });
  }
  partDone(itemId: string, outputIndex: number, contentIndex: number, part: JsonObject): string {
    return this.#event('response.content_part.done', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, part });
  }

  textDelta(itemId: string, outputIndex: number, contentIndex: number, delta: string): string {
    return this.#event('response.output_text.delta', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, delta, logprobs: [] });
  }
  textDone(itemId: string, outputIndex: number, contentIndex: number, text: string): string {
    return this.#event('response.output_text.done', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, text, logprobs: [] });
  }

  refusalDelta(itemId: string, outputIndex: number, contentIndex: number, delta: string): string {
    return this.#event('response.refusal.delta', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, delta });
  }
  refusalDone(itemId: string, outputIndex: number, contentIndex: number, refusal: string): string {
    return this.#event('response.refusal.done', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, refusal });
  }

  argumentsDelta(itemId: string, outputIndex: number, delta: string): string {
    return this.#event('response.function_call_arguments.delta', { item_id: itemId, output_index: outputIndex, delta });
  }
  argumentsDone(itemId: string, outputIndex: number, name: string, args: string): string {
    return this.#event('response.function_call_arguments.done', { item_id: itemId, output_index: outputIndex, name, arguments: args });
  }

  summaryPartAdded(itemId: string, outputIndex: number, summaryIndex: number, part: JsonObject): string {
    return this.#event('response.reasoning_summary_part.added', { item_id: itemId, output_index: outputIndex, summary_index: summaryIndex, part });
  }
  summaryPartDone(itemId: string, outputIndex: number, summaryIndex: number, part: JsonObject): string {
    return this.#event('response.reasoning_summary_part.done', { item_id: itemId, output_index: outputIndex, summary_index: summaryIndex, part });
  }
  summaryTextDelta(itemId: string, outputIndex: number, summaryIndex: number, delta: string): string {
    return this.#event('response.reasoning_summary_text.delta', { item_id: itemId, output_index: outputIndex, summary_index: summaryIndex, delta });
  }
  summaryTextDone(itemId: string, outputIndex: number, summaryIndex: number, text: string): string {
    return this.#event('response.reasoning_summary_text.done', { item_id: itemId, output_index: outputIndex, summary_index: summaryIndex, text });
  }

  reasoningTextDelta(itemId: string, outputIndex: number, contentIndex: number, delta: string): string {
    return this.#event('response.reasoning_text.delta', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, delta });
  }
  reasoningTextDone(itemId: string, outputIndex: number, contentIndex: number, text: string): string {
    return this.#event('response.reasoning_text.done', { item_id: itemId, output_index: outputIndex, content_index: contentIndex, text });
  }

  #event(type: string, fields: JsonObject): string {
    const data = JSON.stringify({ type, sequence_number: this.#sequence++, ...fields });
    return this.#sse ? sseEvent(data, type) : data;
  }
}

/**
 * The response as response.created and response.in_progress carry it:
 * in progress, with no output, usage, error or incomplete_details yet.
 */
export function startOf(response: JsonObject): JsonObject {
  return { ...response, status: 'in_progress', error: null, incomplete_details: null, output: [], usage: null };
}

/**
 * The data of each event (JSON, with its sequence_number) that a stream of
 * this complete response carries, in OpenAI's order: response.created,
 * response.in_progress, then per output item output_item.added, its parts
 * (a message's content_part.added, output_text.delta, output_text.done,
 * content_part.done, or the refusal's; a function call's arguments delta
 * and done; a reasoning item's summary parts and its reasoning_text parts),
 * output_item.done; then response.completed, response.incomplete or
 * (after an `error` event) response.failed. Each text is one delta. Items
 * of other types (a passthrough's web_search_call, say) are added and done
 * whole. What ResponsesFromChat writes for the same answer, up to how the
 * deltas are split.
 */
export function eventsOfResponse(response: JsonObject): string[] {
  const out: string[] = [];
  replay(response, new ResponseEvents('data'), out);
  return out;
}

/** The whole stream of this complete response as SSE text: eventsOfResponse's events, each with its `event:` line. */
export function sseOfResponse(response: JsonObject): string {
  const out: string[] = [];
  replay(response, new ResponseEvents('sse'), out);
  return out.join('');
}

function replay(response: JsonObject, events: ResponseEvents, out: string[]): void {
  const start = startOf(response);
  out.push(events.created(start), events.inProgress(start));
  const output = Array.isArray(response['output']) ? response['output'] : [];
  for (let index = 0; index < output.length; index++) {
    const item = output[index];
    if (isObject(item)) replayItem(item, index, events, out);
  }
  const error = response['error'];
  if (response['status'] === 'failed' && isObject(error)) {
    const code = typeof error['code'] === 'string' ? error['code'] : 'server_error';
    const message = typeof error['message'] === 'string' ? error['message'] : 'The response failed.';
    out.push(events.error({ message, type: 'server_error', code, param: null }));
  }
  out.push(events.end(response));
}

function replayItem(item: JsonObject, index: number, events: ResponseEvents, out: string[]): void {
  const id = typeof item['id'] === 'string' ? item['id'] : '';
  const type = item['type'];
  if (type === 'message') {
    out.push(events.itemAdded(index, { ...item, status: 'in_progress', content: [] }));
    const content = Array.isArray(item['content']) ? item['content'] : [];
    for (let k = 0; k < content.length; k++) {
      const part = content[k];
      if (!isObject(part)) continue;
      if (part['type'] === 'output_text' && typeof part['text'] === 'string') {
        out.push(events.partAdded(id, index, k, outputTextPart('')));
        if (part['text'] !== '') out.push(events.textDelta(id, index, k, part['text']));
        out.push(events.textDone(id, index, k, part['text']));
      } else if (part['type'] === 'refusal' && typeof part['refusal'] === 'string') {
        out.push(events.partAdded(id, index, k, refusalPart('')));
        if (part['refusal'] !== '') out.push(events.refusalDelta(id, index, k, part['refusal']));
        out.push(events.refusalDone(id, index, k, part['refusal']));
      } else out.push(events.partAdded(id, index, k, part));
      out.push(events.partDone(id, index, k, part));
    }
  } else if (type === 'function_call') {
    const args = typeof item['arguments'] === 'string' ? item['arguments'] : '';
    out.push(events.itemAdded(index, { ...item, status: 'in_progress', arguments: '' }));
    if (args !== '') out.push(events.argumentsDelta(id, index, args));
    out.push(events.argumentsDone(id, index, typeof item['name'] === 'string' ? item['name'] : '', args));
  } else if (type === 'reasoning') {
    replayReasoning(item, id, index, events, out);
  } else {
    out.push(events.itemAdded(index, item['status'] === undefined ? item : { ...item, status: 'in_progress' }));
  }
  out.push(events.itemDone(index, item));
}

/** A reasoning item: its summary parts, then its reasoning_text parts (models that show their reasoning). */
function replayReasoning(item: JsonObject, id: string, index: number, events: ResponseEvents, out: string[]): void {
  const summary = Array.isArray(item['summary']) ? item['summary'] : [];
  const content = Array.isArray(item['content']) ? item['content'] : undefined;
  const added: JsonObject = { ...item, summary: [] };
  if (content !== undefined) added['content'] = [];
  out.push(events.itemAdded(index, added));
  for (let k = 0; k < summary.length; k++) {
    const part = summary[k];
    const text = isObject(part) && typeof part['text'] === 'string' ? part['text'] : '';
    out.push(events.summaryPartAdded(id, index, k, summaryPart('')));
    if (text !== '') out.push(events.summaryTextDelta(id, index, k, text));
    out.push(events.summaryTextDone(id, index, k, text), events.summaryPartDone(id, index, k, isObject(part) ? part : summaryPart(text)));
  }
  if (content === undefined) return;
  for (let k = 0; k < content.length; k++) {
    const part = content[k];
    const text = isObject(part) && typeof part['text'] === 'string' ? part['text'] : '';
    out.push(events.partAdded(id, index, k, { type: 'reasoning_text', text: '' }));
    if (text !== '') out.push(events.reasoningTextDelta(id, index, k, text));
    out.push(events.reasoningTextDone(id, index, k, text), events.partDone(id, index, k, isObject(part) ? part : { type: 'reasoning_text', text }));
  }
}
