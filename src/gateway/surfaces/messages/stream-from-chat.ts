import type { HttpProblem } from '../../../platform/errors.ts';
import { upstreamInvalid } from '../../openai-errors.ts';
import { isObject, type JsonObject, parseObject } from '../../providers/json.ts';
import { SseEventTooLarge, SseParser } from '../../providers/sse.ts';
import type { ChatStream, TokenUsage } from '../../providers/types.ts';
import { upstreamEventTooLarge, upstreamStreamIncomplete } from '../../providers/upstream-errors.ts';
import { anthropicErrorBody } from '../../../platform/error-format.ts';
import { anthropicUsageOf, messageId, stopReason } from './from-chat.ts';

export interface MessagesFromChatOptions {
  /** The gateway's request id: the message id derives from it (from-chat.ts's messageId, so both forms agree). */
  requestId: string;
  /** The model to name until the provider's first chunk names its own. */
  model: string;
  /** The provider's name, for error messages. */
  provider: string;
}

/** Most tool calls one answer may make (as the Anthropic adapter's stream bounds them). */
const MAX_TOOL_CALLS = 1024;

type OpenBlock = 'text' | 'thinking' | 'tool' | undefined;

/**
 * A Chat Completions stream (any adapter's chatStream, created with
 * includeUsage: true) relayed as Anthropic's event sequence (Messages API,
 * "Streaming messages"), each event as `event: <type>\ndata: <json>\n\n`:
 * - message_start, at the first chunk (or at the end, for an answer with
 *   none): the message with empty content and usage all zero. Chat
 *   Completions reports usage last; what the inner stream knows when its
 *   first chunk is read depends on how the bytes were split (one push may
 *   hold the whole answer), and the output must not. The SDKs take the
 *   counts of message_delta, which has them all;
 * - a chunk's `reasoning_content` (or `reasoning`) -> a thinking block
 *   (empty signature, as from-chat.ts), its content (or refusal) -> a text
 *   block, each tool call -> a tool_use block whose arguments arrive as
 *   input_json_delta pieces; a block is opened when its kind changes and
 *   closed (content_block_stop) before the next opens, so blocks never
 *   interleave, and parallel tool calls become consecutive blocks. A
 *   provider that goes back to a tool call it had moved on from (arguments
 *   interleaved between calls, which no provider we know does) cannot be
 *   relayed so: the stream ends with `upstream_invalid_response`;
 * - [DONE] -> the open block's content_block_stop, message_delta with the
 *   stop_reason (from-chat.ts's stopReason) and the usage of the inner
 *   stream (its usage chunk, read by the inner adapter), message_stop;
 * - an error (the inner stream's error event, fail(), a body ended early)
 *   -> one `error` event with the type for its status (the platform's Anthropic error format) and
 *   nothing after it, as Anthropic ends a failed stream.
 * The inner stream's output is read with the project's SSE parser, so an
 * event split across pushes is whole before it is translated. usage, model,
 * settleUnfinished and error are the inner stream's (error is this
 * stream's own when it ended the stream itself).
 */
export class MessagesFromChat implements ChatStream {
  readonly #inner: ChatStream;
  readonly #options: MessagesFromChatOptions;
  readonly #parser = new SseParser();
  #out = '';
  #started = false;
  #finished = false;
  #error: HttpProblem | undefined;
  /** The kind of the block open now, its index among this message's blocks, and for a tool call its Chat Completions index. */
  #open: OpenBlock;
  #blocks = 0;
  #openTool = -1;
  /** Chat Completions indexes of the tool calls begun so far. */
  readonly #toolCalls = new Set<number>();
  #finishReason: unknown;

  constructor(inner: ChatStream, options: MessagesFromChatOptions) {
    this.#inner = inner;
    this.#options = options;
  }

  get usage(): TokenUsage | undefined {
    return this.#inner.usage;
  }
  get model(): string | undefined {
    return this.#inner.model;
  }
  get error(): HttpProblem | undefined {
    return this.#error ?? this.#inner.error;
  }

  settleUnfinished(promptTokens: () => number): void {
    this.#inner.settleUnfinished(promptTokens);
  }

  push(chunk: Buffer): string {
    if (this.#finished) return '';
    this.#read(this.#inner.push(chunk), false);
    return this.#take();
  }

  end(): string {
    if (this.#finished) return '';
    this.#read(this.#inner.end(), true);
    if (!this.#finished) this.#stop(upstreamStreamIncomplete(this.#options.provider));
    return this.#take();
  }

  fail(error: HttpProblem): string {
    if (this.#finished) return '';
    this.#read(this.#inner.fail(error), false);
    if (!this.#finished) this.#stop(error);
    return this.#take();
  }

  /** The inner stream's output (OpenAI SSE), parsed and translated; `last`: nothing follows it. */
  #read(text: string, last: boolean): void {
    try {
      if (text !== '') this.#parser.push(Buffer.from(text), this.#onEvent);
      if (last) this.#parser.end(this.#onEvent);
    } catch (err) {
      if (!(err instanceof SseEventTooLarge)) throw err;
      if (!this.#finished) this.#stop(upstreamEventTooLarge(this.#options.provider, err.limit));
    }
  }

  readonly #onEvent = (_event: string, data: string): void => {
    if (this.#finished) return;
    if (data === '[DONE]') {
      this.#finish();
      return;
    }
    const parsed = parseObject(data);
    if (parsed === undefined) {
      this.#stop(upstreamInvalid(this.#options.provider));
      return;
    }
    if (parsed['error'] !== undefined) {
      // The inner stream wrote its error event and recorded the error with its status.
      this.#stop(this.#inner.error ?? upstreamInvalid(this.#options.provider));
      return;
    }
    this.#start(typeof parsed['model'] === 'string' ? parsed['model'] : undefined);
    const choices = parsed['choices'];
    const choice = Array.isArray(choices) ? choices[0] : undefined;
    if (!isObject(choice)) return;
    const delta = choice['delta'];
    if (isObject(delta)) this.#delta(delta);
    if (choice['finish_reason'] !== undefined && choice['finish_reason'] !== null) this.#finishReason = choice['finish_reason'];
  };

  #delta(delta: JsonObject): void {
    const reasoning = delta['reasoning_content'] ?? delta['reasoning'];
    if (typeof reasoning === 'string' && reasoning !== '') {
      this.#ensure('thinking', '{"type":"thinking","thinking":"","signature":""}');
      this.#event('content_block_delta', `{"type":"content_block_delta","index":${this.#blocks - 1},"delta":{"type":"thinking_delta","thinking":${JSON.stringify(reasoning)}}}`);
    }
    const text = typeof delta['content'] === 'string' && delta['content'] !== '' ? delta['content'] : delta['refusal'];
    if (typeof text === 'string' && text !== '') {
      this.#ensure('text', '{"type":"text","text":""}');
      this.#event('content_block_delta', `{"type":"content_block_delta","index":${this.#blocks - 1},"delta":{"type":"text_delta","text":${JSON.stringify(text)}}}`);
    }
    const calls = delta['tool_calls'];
    if (!Array.isArray(calls)) return;
    for (let k = 0; k < calls.length && !this.#finished; k++) {
      const call = calls[k];
      if (isObject(call)) this.#toolCall(call, typeof call['index'] === 'number' ? call['index'] : k);
    }
  }

  /** One piece of a tool call: the first opens its block, later ones add to it while it is open. */
  #toolCall(call: JsonObject, index: number): void {
    const fn = isObject(call['function']) ? call['function'] : {};
    if (this.#open !== 'tool' || this.#openTool !== index) {
      if (this.#toolCalls.has(index) || this.#toolCalls.size >= MAX_TOOL_CALLS) {
        this.#stop(upstreamInvalid(this.#options.provider));
        return;
      }
      this.#toolCalls.add(index);
      const id = typeof call['id'] === 'string' ? call['id'] : `toolu_${this.#options.requestId}_${index}`;
      const name = typeof fn['name'] === 'string' ? fn['name'] : '';
      this.#ensure('tool', `{"type":"tool_use","id":${JSON.stringify(id)},"name":${JSON.stringify(name)},"input":{}}`, true);
      this.#openTool = index;
    }
    const args = fn['arguments'];
    if (typeof args === 'string' && args !== '') {
      this.#event('content_block_delta', `{"type":"content_block_delta","index":${this.#blocks - 1},"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(args)}}}`);
    }
  }

  /** Opens a block of this kind unless one is open (`fresh`: always a new one); closes the open block first. */
  #ensure(kind: OpenBlock, contentBlock: string, fresh = false): void {
    if (this.#open === kind && !fresh) return;
    this.#close();
    this.#open = kind;
    this.#event('content_block_start', `{"type":"content_block_start","index":${this.#blocks},"content_block":${contentBlock}}`);
    this.#blocks++;
  }

  #close(): void {
    if (this.#open === undefined) return;
    this.#event('content_block_stop', `{"type":"content_block_stop","index":${this.#blocks - 1}}`);
    this.#open = undefined;
  }

  #start(model: string | undefined): void {
    if (this.#started) return;
    this.#started = true;
    const message = {
      id: messageId(this.#options.requestId),
      type: 'message',
      role: 'assistant',
      model: model ?? this.#inner.model ?? this.#options.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: anthropicUsageOf(undefined),
    };
    this.#event('message_start', JSON.stringify({ type: 'message_start', message }));
  }

  #finish(): void {
    this.#start(undefined);
    this.#close();
    const delta = { stop_reason: stopReason(this.#finishReason, this.#toolCalls.size > 0), stop_sequence: null };
    this.#event('message_delta', JSON.stringify({ type: 'message_delta', delta, usage: anthropicUsageOf(this.#inner.usage) }));
    this.#event('message_stop', '{"type":"message_stop"}');
    this.#finished = true;
  }

  #stop(error: HttpProblem): void {
    this.#error = error;
    this.#finished = true;
    this.#event('error', JSON.stringify(anthropicErrorBody(error)));
  }

  #event(type: string, data: string): void {
    this.#out += `event: ${type}\ndata: ${data}\n\n`;
  }

  #take(): string {
    const out = this.#out;
    this.#out = '';
    return out;
  }
}
