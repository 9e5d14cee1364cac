import { openaiErrorBody } from '../../../platform/error-format.ts';
import type { HttpProblem } from '../../../platform/errors.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import type { ChatStream } from '../../providers/types.ts';
import { ChatStreamTranslator } from '../chat-stream-translator.ts';
import { ResponseEvents } from './events.ts';
import {
  endOf,
  functionCallItem,
  itemId,
  messageItem,
  outputTextPart,
  type ResponseContext,
  type ResponseEnd,
  reasoningItem,
  refusalPart,
  responseObject,
  responseUsage,
  summaryPart,
} from './from-chat.ts';
import { responsesToolName } from './tool-names.ts';

/** The output item being streamed, with what it has gathered so far (its .done events and the final response repeat it whole). */
type OpenItem =
  | { kind: 'reasoning'; index: number; id: string; text: string }
  | { kind: 'message'; index: number; id: string; parts: JsonObject[]; part: 'text' | 'refusal' | undefined; text: string }
  | { kind: 'call'; index: number; id: string; chatIndex: number; callId: string; name: string; args: string };

const IN_PROGRESS: ResponseEnd = { status: 'in_progress', incomplete: null, error: null };

/**
 * A Chat Completions stream (any adapter's chatStream, created with
 * includeUsage: true) relayed as the Responses API's events (events.ts), in
 * OpenAI's order, as the answer arrives:
 * - response.created and response.in_progress at the first chunk (their
 *   model the chunk's), or at the end for an answer with none;
 * - a chunk's `reasoning_content` (or `reasoning`) -> a reasoning item with
 *   one summary part, reasoning_summary_text.delta per piece; its content
 *   -> a message item's output_text part, output_text.delta per piece; its
 *   refusal -> a refusal part of that message; each tool call -> a
 *   function_call item (named back through ctx.toolNames), its arguments
 *   as function_call_arguments.delta pieces. An item opens when the kind
 *   of output changes and is done (its .done events, output_item.done)
 *   before the next opens, so items never interleave and parallel tool
 *   calls become consecutive items. A provider that goes back to a tool
 *   call it had moved on from cannot be relayed so: the stream fails with
 *   `upstream_invalid_response`. Item ids are from-chat.ts's, so the same
 *   answer gets the same ids and items whole (responseFromChat) and streamed;
 * - [DONE] -> the open item done, then response.completed, or
 *   response.incomplete when the finish_reason was length or
 *   content_filter, with the full response: usage from the inner stream,
 *   `cost` from its usage chunk;
 * - an error (the inner stream's error event, fail(), a body ended early)
 *   -> an `error` event (events.ts says why it has both shapes), then
 *   response.failed whose response has `error` {code, message} and the
 *   output so far (the open item `incomplete`), and nothing after. The
 *   openai SDK's responses.stream() raises an APIError on the `error`
 *   event; Codex reads response.failed.
 * Reading the inner stream, and ending once, are ChatStreamTranslator's.
 * `response` is the final response once it completed (or was incomplete),
 * for the store; undefined after a failure.
 */
export class ResponsesFromChat extends ChatStreamTranslator {
  readonly #ctx: ResponseContext;
  protected readonly provider: string;
  readonly #events = new ResponseEvents();
  #started = false;
  #response: JsonObject | undefined;
  #model = '';
  /** Items done, in order. */
  readonly #output: JsonObject[] = [];
  #open: OpenItem | undefined;
  #cost: unknown;

  constructor(base: ChatStream, ctx: ResponseContext) {
    super(base);
    this.#ctx = ctx;
    this.provider = ctx.provider ?? 'provider';
  }

  /** The final response object once the stream completed (or ended incomplete); undefined until then, and after a failure. */
  get response(): JsonObject | undefined {
    return this.#response;
  }

  protected chunk(parsed: JsonObject): void {
    this.#start(typeof parsed['model'] === 'string' ? parsed['model'] : undefined);
    if (isObject(parsed['usage'])) this.#cost = parsed['usage']['cost'];
  }

  protected delta(delta: JsonObject): void {
    const reasoning = delta['reasoning_content'] ?? delta['reasoning'];
    if (typeof reasoning === 'string' && reasoning !== '') this.#reasoning(reasoning);
    if (typeof delta['content'] === 'string' && delta['content'] !== '') this.#text('text', delta['content']);
    if (typeof delta['refusal'] === 'string' && delta['refusal'] !== '') this.#text('refusal', delta['refusal']);
  }

  #reasoning(text: string): void {
    let open = this.#open;
    if (open?.kind !== 'reasoning') {
      this.#close('completed');
      open = { kind: 'reasoning', index: this.#output.length, id: itemId(this.#ctx.id, 'rs', this.#output.length), text: '' };
      this.#open = open;
      this.out += this.#events.itemAdded(open.index, reasoningItem(open.id, []));
      this.out += this.#events.summaryPartAdded(open.id, open.index, 0, summaryPart(''));
    }
    open.text += text;
    this.out += this.#events.summaryTextDelta(open.id, open.index, 0, text);
  }

  /** A piece of the message's text or refusal: opens the message, and a part of this kind, unless open. */
  #text(kind: 'text' | 'refusal', text: string): void {
    let open = this.#open;
    if (open?.kind !== 'message') {
      this.#close('completed');
      open = { kind: 'message', index: this.#output.length, id: itemId(this.#ctx.id, 'msg', this.#output.length), parts: [], part: undefined, text: '' };
      this.#open = open;
      this.out += this.#events.itemAdded(open.index, messageItem(open.id, 'in_progress', []));
    }
    if (open.part !== kind) {
      this.#closePart(open);
      open.part = kind;
      this.out += this.#events.partAdded(open.id, open.index, open.parts.length, kind === 'text' ? outputTextPart('') : refusalPart(''));
    }
    open.text += text;
    this.out +=
      kind === 'text'
        ? this.#events.textDelta(open.id, open.index, open.parts.length, text)
        : this.#events.refusalDelta(open.id, open.index, open.parts.length, text);
  }

  /** One piece of a tool call: the first opens its item, later ones add to it while it is open. */
  protected toolCall(call: JsonObject, chatIndex: number): void {
    const fn = isObject(call['function']) ? call['function'] : {};
    let open = this.#open;
    if (open?.kind !== 'call' || open.chatIndex !== chatIndex) {
      if (!this.beginToolCall(chatIndex)) return;
      this.#close('completed');
      const index = this.#output.length;
      const callId = typeof call['id'] === 'string' && call['id'] !== '' ? call['id'] : itemId(this.#ctx.id, 'call', index);
      const name = typeof fn['name'] === 'string' ? fn['name'] : '';
      open = { kind: 'call', index, id: itemId(this.#ctx.id, 'fc', index), chatIndex, callId, name, args: '' };
      this.#open = open;
      this.out += this.#events.itemAdded(index, functionCallItem(open.id, 'in_progress', callId, name, '', this.#ctx.toolNames));
    }
    const args = fn['arguments'];
    if (typeof args === 'string' && args !== '') {
      open.args += args;
      this.out += this.#events.argumentsDelta(open.id, open.index, args);
    }
  }

  /** The open item's .done events and output_item.done; it joins the output. */
  #close(status: 'completed' | 'incomplete'): void {
    const open = this.#open;
    if (open === undefined) return;
    this.#open = undefined;
    let item: JsonObject;
    if (open.kind === 'reasoning') {
      const part = summaryPart(open.text);
      this.out += this.#events.summaryTextDone(open.id, open.index, 0, open.text);
      this.out += this.#events.summaryPartDone(open.id, open.index, 0, part);
      item = reasoningItem(open.id, [part]);
    } else if (open.kind === 'message') {
      this.#closePart(open);
      item = messageItem(open.id, status, open.parts);
    } else {
      const name = responsesToolName(open.name, this.#ctx.toolNames).name;
      this.out += this.#events.argumentsDone(open.id, open.index, name, open.args);
      item = functionCallItem(open.id, status, open.callId, open.name, open.args, this.#ctx.toolNames);
    }
    this.out += this.#events.itemDone(open.index, item);
    this.#output.push(item);
  }

  #closePart(open: OpenItem & { kind: 'message' }): void {
    if (open.part === undefined) return;
    const index = open.parts.length;
    const part = open.part === 'text' ? outputTextPart(open.text) : refusalPart(open.text);
    this.out +=
      open.part === 'text' ? this.#events.textDone(open.id, open.index, index, open.text) : this.#events.refusalDone(open.id, open.index, index, open.text);
    this.out += this.#events.partDone(open.id, open.index, index, part);
    open.parts.push(part);
    open.part = undefined;
    open.text = '';
  }

  #start(model: string | undefined): void {
    if (this.#started) return;
    this.#started = true;
    this.#model = model ?? this.inner.model ?? this.#ctx.model;
    const response = responseObject(this.#ctx, this.#model, IN_PROGRESS, [], null);
    this.out += this.#events.created(response);
    this.out += this.#events.inProgress(response);
  }

  protected done(): void {
    this.#start(undefined);
    const end = endOf(this.finishReason);
    this.#close(end.status === 'incomplete' ? 'incomplete' : 'completed');
    const response = responseObject(this.#ctx, this.#model, end, this.#output, responseUsage(this.inner.usage, this.#cost));
    this.out += this.#events.end(response);
    this.#response = response;
  }

  protected failed(error: HttpProblem): void {
    this.#start(undefined);
    const body = openaiErrorBody(error).error;
    const output = this.#output;
    const open = this.#open;
    if (open !== undefined) output.push(this.#snapshot(open));
    this.#open = undefined;
    const end: ResponseEnd = { status: 'failed', incomplete: null, error: { code: body.code, message: body.message } };
    this.out += this.#events.error(body);
    this.out += this.#events.end(responseObject(this.#ctx, this.#model, end, output, responseUsage(this.inner.usage, this.#cost)));
  }

  /** The open item as it stands, `incomplete`, for a failed response (no .done events: the stream ends here). */
  #snapshot(open: OpenItem): JsonObject {
    if (open.kind === 'reasoning') return reasoningItem(open.id, [summaryPart(open.text)]);
    if (open.kind === 'call') return functionCallItem(open.id, 'incomplete', open.callId, open.name, open.args, this.#ctx.toolNames);
    const parts = open.parts.slice();
    if (open.part !== undefined) parts.push(open.part === 'text' ? outputTextPart(open.text) : refusalPart(open.text));
    return messageItem(open.id, 'incomplete', parts);
  }

}
