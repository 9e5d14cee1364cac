import { upstreamInvalid } from '../../openai-errors.ts';
import { isObject, type JsonObject, parseObject } from '../json.ts';
import type { CallContext, ChatResult } from '../types.ts';
import { embeddedError } from './errors.ts';
import { anthropicUsage, openAiUsageObject } from './usage.ts';

/**
 * Anthropic's stop_reason as OpenAI's finish_reason: end_turn, stop_sequence
 * and pause_turn -> stop; max_tokens (and a full context window) -> length;
 * tool_use -> tool_calls; refusal -> content_filter.
 */
export function finishReason(stopReason: unknown): string {
  if (stopReason === 'max_tokens' || stopReason === 'model_context_window_exceeded') return 'length';
  if (stopReason === 'tool_use') return 'tool_calls';
  if (stopReason === 'refusal') return 'content_filter';
  return 'stop';
}

/**
 * An Anthropic message as an OpenAI chat.completion: the text blocks joined
 * as `content`, tool_use blocks as `tool_calls` (input serialized as the
 * JSON-string `arguments`), other blocks (thinking, server tools) left out;
 * the id derived from the gateway's request id, `created` from the context.
 */
export function chatResponse(provider: string, body: Buffer, ctx: CallContext): ChatResult {
  const parsed = parseObject(body.toString('utf8'));
  if (parsed !== undefined && parsed['type'] === 'error') throw embeddedError(provider, parsed);
  const blocks = parsed?.['content'];
  if (parsed === undefined || !Array.isArray(blocks)) throw upstreamInvalid(provider);
  let text = '';
  const toolCalls: JsonObject[] = [];
  for (const block of blocks) {
    if (!isObject(block)) throw upstreamInvalid(provider);
    if (block['type'] === 'text' && typeof block['text'] === 'string') text += block['text'];
    else if (block['type'] === 'tool_use') {
      toolCalls.push({
        id: block['id'],
        type: 'function',
        function: { name: block['name'], arguments: JSON.stringify(block['input'] ?? {}) },
      });
    }
  }
  const usage = anthropicUsage(parsed['usage']);
  const model = typeof parsed['model'] === 'string' ? parsed['model'] : undefined;
  const message: JsonObject = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text, refusal: null };
  if (toolCalls.length > 0) message['tool_calls'] = toolCalls;
  const completion: JsonObject = {
    id: `chatcmpl-${ctx.requestId}`,
    object: 'chat.completion',
    created: ctx.created,
    model: model ?? ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(parsed['stop_reason']) }],
  };
  if (usage !== undefined) completion['usage'] = openAiUsageObject(usage);
  return { body: JSON.stringify(completion), usage, model };
}
