
import { upstreamInvalid } from '../../openai-errors.ts';
import { RelayedStream } from '../relayed-stream.ts';
import { isObject, type JsonObject, parseObject } from '../json.ts';
import { SSE_DONE } from '../sse.ts';
import type { CallContext, StreamOptions, } from '../types.ts';
import { embeddedError } from './errors.ts';
import { finishReason } from './response.ts';
import { anthropicUsage, openAiUsageObject } from './usage.ts';

/**
 * An Anthropic message stream (Messages API, "Streaming messages") as OpenAI
 * chat.completion.chunk events:
 * - message_start -> the first chunk, `delta: {role: "assistant", content: ""}`;
 * - text deltas -> `delta.content`;
 * - a tool_use block's start -> `delta.tool_calls[{index, id, type, function: {name, arguments: ""}}]`,
 *   its input_json_delta -> `function.arguments` pieces for the same index;
 * - message_delta -> a chunk with an empty delta and the finish_reason;
 * - message_stop -> the usage chunk (`choices: []`, with usage.cost) when the
 *   client asked for it, then [DONE];
 * - an error event -> one OpenAI-shaped error event, no [DONE];
 * - ping, thinking and other unknown events are skipped, as Anthropic's
 *   versioning policy says new event types may appear.
 * Usage: message_start carries the input counts; message_delta carries the
 * cumulative output count (and, on newer models, final input counts, which win).
 * The length of generated text (text, tool input, thinking) is counted, for a
 * stream that ends before message_delta.
 * Chunks are written from a prefix built once per stream, so a text delta
 * costs one JSON.stringify of its text.
 */
/** Most tool calls one answer may make (real ones make a few; OpenAI accepts at most 128 tools in a request). */
const MAX_TOOL_CALLS = 1024;

export class AnthropicStream extends RelayedStream {
  readonly #ctx: CallContext;
  readonly #options: StreamOptions;
  #started = false;
  #prefix = '';
  #rawUsage: JsonObject = {};
  /** Anthropic content-block index -> OpenAI tool_calls index. */
  readonly #toolIndex = new Map<number, number>();

  constructor(provider: string, ctx: CallContext, options: StreamOptions) {
    super(provider);
    this.#ctx = ctx;
    this.#options = options;
  }

  protected readonly onEvent = (_event: string, data: string): void => {
    if (this.finished) return;
    const parsed = parseObject(data);
    const type = parsed?.['type'];
    if (parsed === undefined || typeof type !== 'string') {
      this.stop(upstreamInvalid(this.provider));
      return;
    }
    if (type === 'error') {
      this.stop(embeddedError(this.provider, parsed));
      return;
    }
    if (type === 'message_start') {
      this.#start(parsed['message']);
      return;
    }
    if (type === 'ping' || (!type.startsWith('message_') && !type.startsWith('content_block_'))) return;
    if (!this.#started) {
      this.stop(upstreamInvalid(this.provider));
      return;
    }
    if (type === 'content_block_start') this.#blockStart(parsed['index'], parsed['content_block']);
    else if (type === 'content_block_delta') this.#blockDelta(parsed['index'], parsed['delta']);
    else if (type === 'message_delta') this.#messageDelta(parsed);
    else if (type === 'message_stop') this.#messageStop();
  };

  #start(message: unknown): void {
    if (!isObject(message)) {
      this.stop(upstreamInvalid(this.provider));
      return;
    }
    this.#started = true;
    if (typeof message['model'] === 'string') this.reportedModel = message['model'];
    this.#prefix =
      `{"id":${JSON.stringify(`chatcmpl-${this.#ctx.requestId}`)},"object":"chat.completion.chunk",` +
      `"created":${this.#ctx.created},"model":${JSON.stringify(this.reportedModel ?? this.#ctx.model)},"choices":[{"index":0,"delta":`;
    this.#addUsage(message['usage']);
    this.#chunk('{"role":"assistant","content":""}', 'null');
  }

  #blockStart(index: unknown, block: unknown): void {
    if (!isObject(block)) return;
    if (block['type'] === 'text' && typeof block['text'] === 'string' && block['text'] !== '') {
      this.generated(block['text']);
      this.#chunk(`{"content":${JSON.stringify(block['text'])}}`, 'null');
    } else if (block['type'] === 'tool_use' && typeof index === 'number') {
      // Bounded: an upstream announcing tool calls without end must not grow this map with them.
      if (this.#toolIndex.size >= MAX_TOOL_CALLS) {
        this.stop(upstreamInvalid(this.provider));
        return;
      }
      const toolIndex = this.#toolIndex.size;
      this.#toolIndex.set(index, toolIndex);
      const call = { index: toolIndex, id: block['id'], type: 'function', function: { name: block['name'], arguments: '' } };
      this.#chunk(`{"tool_calls":[${JSON.stringify(call)}]}`, 'null');
    }
  }

  #blockDelta(index: unknown, delta: unknown): void {
    if (!isObject(delta)) return;
    if (delta['type'] === 'text_delta' && typeof delta['text'] === 'string') {
      this.generated(delta['text']);
      this.#chunk(`{"content":${JSON.stringify(delta['text'])}}`, 'null');
    } else if (delta['type'] === 'thinking_delta') {
      // Not relayed, but generated and billed as output.
      this.generated(delta['thinking']);
    } else if (delta['type'] === 'input_json_delta' && typeof delta['partial_json'] === 'string' && delta['partial_json'] !== '') {
      this.generated(delta['partial_json']);
      const toolIndex = typeof index === 'number' ? this.#toolIndex.get(index) : undefined;
      if (toolIndex === undefined) return;
      this.#chunk(`{"tool_calls":[{"index":${toolIndex},"function":{"arguments":${JSON.stringify(delta['partial_json'])}}}]}`, 'null');
    }
  }

  #messageDelta(parsed: JsonObject): void {
    // Its usage has the final output count (message_start's is a placeholder).
    if (isObject(parsed['usage'])) this.usageFinal = true;
    this.#addUsage(parsed['usage']);
    const delta = parsed['delta'];
    if (isObject(delta) && delta['stop_reason'] !== undefined && delta['stop_reason'] !== null) {
      this.#chunk('{}', `"${finishReason(delta['stop_reason'])}"`);
    }
  }

  #messageStop(): void {
    if (this.#options.includeUsage && this.reportedUsage !== undefined) {
      const usage = openAiUsageObject(this.reportedUsage);
      const cost = this.#options.cost(this.reportedUsage);
      if (cost !== undefined) usage['cost'] = cost;
      const chunk = {
        id: `chatcmpl-${this.#ctx.requestId}`,
        object: 'chat.completion.chunk',
        created: this.#ctx.created,
        model: this.reportedModel ?? this.#ctx.model,
        choices: [],
        usage,
      };
      this.out += `data: ${JSON.stringify(chunk)}\n\n`;
    }
    this.finished = true;
    this.out += SSE_DONE;
  }

  /** Merges the counts a usage object reports (null or absent fields keep the earlier value). */
  #addUsage(usage: unknown): void {
    if (!isObject(usage)) return;
    for (const key of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']) {
      // Anything but a number is kept too, for anthropicUsage to clamp and flag.
      if (usage[key] !== undefined && usage[key] !== null) this.#rawUsage[key] = usage[key];
    }
    this.reportedUsage = anthropicUsage(this.#rawUsage);
  }

  /** One chat.completion.chunk event; `finish` is JSON (null or a quoted reason). */
  #chunk(delta: string, finish: string): void {
    this.out += `data: ${this.#prefix}${delta},"logprobs":null,"finish_reason":${finish}}]}\n\n`;
  }
}
