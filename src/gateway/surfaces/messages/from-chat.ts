import { randomUUID } from 'node:crypto';
import { upstreamInvalid } from '../../openai-errors.ts';
import { isObject, type JsonObject, parseObject } from '../../providers/json.ts';
import { openAiUsage } from '../../providers/openai-compatible/usage.ts';
import type { TokenUsage } from '../../providers/types.ts';

/** Anthropic's `usage` of a message (Messages API reference), the four counts the SDKs read. */
export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/**
 * A TokenUsage in Anthropic's terms: input_tokens counts only the input
 * neither read from nor written to the cache (Anthropic's prompt is the sum
 * of the three), output_tokens every output token. No usage: all zero.
 */
export function anthropicUsageOf(usage: TokenUsage | undefined): AnthropicUsage {
  if (usage === undefined) return { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };
  return {
    input_tokens: Math.max(0, usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens),
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cachedTokens,
    output_tokens: usage.completionTokens,
  };
}

/** An OpenAI `usage` object (prompt_tokens with cached_tokens inside them) as Anthropic's usage; cache writes are 0, as OpenAI reports none. */
export function anthropicUsageFromOpenAi(usage: unknown): AnthropicUsage {
  return anthropicUsageOf(openAiUsage(usage));
}

/**
 * Chat Completions' finish_reason as Anthropic's stop_reason: stop ->
 * end_turn, length -> max_tokens, tool_calls and function_call -> tool_use,
 * content_filter -> refusal. An answer that made tool calls is tool_use
 * whatever the reason says (some compatible providers say "stop"): Anthropic
 * always ends a turn with tool_use blocks so, and agents run tools on it.
 * Anything else, or none, is end_turn.
 */
export function stopReason(finishReason: unknown, madeToolCalls: boolean): string {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'content_filter') return 'refusal';
  if (madeToolCalls || finishReason === 'tool_calls' || finishReason === 'function_call') return 'tool_use';
  return 'end_turn';
}

/** The Anthropic message id for a gateway request id (the stream uses the same, so both forms of one answer agree). */
export function messageId(requestId: string): string {
  return `msg_${requestId}`;
}

export interface FromChatOptions {
  /** The provider's name, for the error message. */
  provider: string;
  /** The gateway's request id: the message id derives from it; without it, from the completion's id. */
  requestId?: string | undefined;
  /** The model to name when the completion names none. */
  model?: string | undefined;
}

/**
 * A complete Chat Completions answer (`chat.completion` JSON) as an
 * Anthropic Messages answer, JSON text. Content, in this order:
 * `reasoning_content` (DeepSeek, vLLM; OpenRouter's `reasoning`) -> a
 * thinking block with an empty signature (there is none to give; a client
 * that sends it back to Anthropic would be refused, but the gateway drops
 * thinking for Chat Completions targets); the text (or a refusal) -> a text
 * block; tool_calls -> tool_use blocks, `input` parsed from `arguments`.
 * Arguments that are not a JSON object (a model's broken JSON) become `{}`:
 * Anthropic's `input` is always an object, and clients validate it against
 * the tool's schema, so an empty object fails there, visibly, rather than
 * in the client's parser. stop_reason: stopReason(); stop_sequence null
 * (Chat Completions does not say which stop sequence matched). Throws a
 * 502 `upstream_invalid_response` for JSON that is not a completion.
 */
export function messageFromChat(completion: string, options: FromChatOptions): string {
  const parsed = parseObject(completion);
  const choices = parsed?.['choices'];
  const choice = Array.isArray(choices) ? choices[0] : undefined;
  const message = isObject(choice) ? choice['message'] : undefined;
  if (parsed === undefined || !isObject(choice) || !isObject(message)) throw upstreamInvalid(options.provider);
  const content: JsonObject[] = [];
  const reasoning = message['reasoning_content'] ?? message['reasoning'];
  if (typeof reasoning === 'string' && reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  const text = messageText(message);
  if (text !== '') content.push({ type: 'text', text });
  const calls = message['tool_calls'];
  let madeToolCalls = false;
  if (Array.isArray(calls)) {
    for (const call of calls) {
      const fn = isObject(call) ? call['function'] : undefined;
      if (!isObject(call) || !isObject(fn)) continue;
      madeToolCalls = true;
      content.push({
        type: 'tool_use',
        id: typeof call['id'] === 'string' ? call['id'] : `toolu_${content.length}`,
        name: typeof fn['name'] === 'string' ? fn['name'] : '',
        input: toolInput(fn['arguments']),
      });
    }
  }
  const id = options.requestId !== undefined ? messageId(options.requestId) : idFromCompletion(parsed['id']);
  const model = typeof parsed['model'] === 'string' ? parsed['model'] : (options.model ?? '');
  return JSON.stringify({
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(choice['finish_reason'], madeToolCalls),
    stop_sequence: null,
    usage: anthropicUsageFromOpenAi(parsed['usage']),
  });
}

/** The message's text: its content (a string, or text parts joined), else its refusal. */
function messageText(message: JsonObject): string {
  const content = message['content'];
  if (typeof content === 'string' && content !== '') return content;
  if (Array.isArray(content)) {
    let text = '';
    for (const part of content) if (isObject(part) && typeof part['text'] === 'string') text += part['text'];
    if (text !== '') return text;
  }
  return typeof message['refusal'] === 'string' ? message['refusal'] : '';
}

/** Tool-call arguments (a JSON object in a string) as Anthropic's `input`; `{}` when they are not one (see messageFromChat). */
export function toolInput(args: unknown): JsonObject {
  if (isObject(args)) return args;
  if (typeof args !== 'string' || args === '') return {};
  const parsed = parseObject(args);
  return parsed ?? {};
}

function idFromCompletion(id: unknown): string {
  if (typeof id !== 'string' || id === '') return messageId(randomUUID().replaceAll('-', ''));
  return messageId(id.startsWith('chatcmpl-') ? id.slice('chatcmpl-'.length) : id);
}
