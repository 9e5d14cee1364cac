import { anthropicErrorBody } from '../../../platform/error-format.ts';
import type { HttpProblem } from '../../../platform/errors.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import type { ChatStream } from '../../providers/types.ts';
import { ChatStreamTranslator } from '../chat-stream-translator.ts';
import { anthropicUsageOf, messageId, stopReason } from './from-chat.ts';

export interface MessagesFromChatOptions {
  /** The gateway's request id: the message id derives from it (from-chat.ts's messageId, so both forms agree). */
  requestId: string;
  /** The model to name until the provider's first chunk names its own. */
  model: string;
  /** The provider's name, for error messages. */
  provider: string;
}

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
 * Reading the inner stream, and ending once, are ChatStreamTranslator's.
 */
export class MessagesFromChat extends ChatStreamTranslator {
  readonly #options: MessagesFromChatOptions;
  protected readonly provider: string;
  #started = false;
  /** The kind of the block open now, its index among this message's blocks, and for a tool call its Chat Completions index. */
  #open: OpenBlock;
  #blocks = 0;
  #openTool = -1;

  constructor(inner: ChatStream, options: MessagesFromChatOptions) {
    super(inner);
    this.#options = options;
    this.provider = options.provider;
  }

  protected chunk(parsed: JsonObject): void {
    this.#start(typeof parsed['model'] === 'string' ? parsed['model'] : undefined);
  }

  protected delta(delta: JsonObject): void {
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
  }

  /** One piece of a tool call: the first opens its block, later ones add to it while it is open. */
  protected toolCall(call: JsonObject, index: number): void {
    const fn = isObject(call['function']) ? call['function'] : {};
    if (this.#open !== 'tool' || this.#openTool !== index) {
      if (!this.beginToolCall(index)) return;
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
      model: model ?? this.inner.model ?? this.#options.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: anthropicUsageOf(undefined),
    };
    this.#event('message_start', JSON.stringify({ type: 'message_start', message }));
  }

  protected done(): void {
    this.#start(undefined);
    this.#close();
    const delta = { stop_reason: stopReason(this.finishReason, this.toolCalls > 0), stop_sequence: null };
    this.#event('message_delta', JSON.stringify({ type: 'message_delta', delta, usage: anthropicUsageOf(this.inner.usage) }));
    this.#event('message_stop', '{"type":"message_stop"}');
  }

  protected failed(error: HttpProblem): void {
    this.#event('error', JSON.stringify(anthropicErrorBody(error)));
  }

  #event(type: string, data: string): void {
    this.out += `event: ${type}\ndata: ${data}\n\n`;
  }
}
