import type { HttpProblem } from '../../../platform/errors.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import type { ChatRequest } from '../../providers/types.ts';
import { decodeConversation } from './to-chat-messages.ts';
import { decodeTools } from './to-chat-tools.ts';
import { FirstProblem } from './uncarried.ts';

export interface DecodeOptions {
  /** The target model reasons (catalog/provider knows): map `thinking` to `reasoning_effort`; otherwise leave thinking out. */
  reasoning: boolean;
  /** Which field carries the output limit for this provider. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** The target's largest output, when known: a larger max_tokens (Claude Code sends 128000) is lowered to it. */
  maxOutputTokens?: number | undefined;
}

export interface DecodedMessages {
  /** The request in Chat Completions form: what the pipeline's stages read, and what an OpenAI-compatible provider is sent (clean: no Anthropic-only fields). */
  chat: ChatRequest;
  /** Tools left out because a chat-completions provider has no equivalent (server tools such as web_search_*, code_execution_*, and Anthropic-schema client tools bash_*, text_editor_*, computer_*), by name. */
  omittedTools: string[];
  /**
   * The first piece of the request a chat-completions provider cannot carry,
   * as the 400 to answer if the call goes to one (code `unsupported_content`
   * for content with no equivalent, `invalid_request_body` for a shape the
   * Messages API refuses too; `param` says where). Undefined when all of it
   * can be carried.
   */
  uncarried: HttpProblem | undefined;
}

/**
 * A Messages API request (POST /v1/messages) as the Chat Completions request
 * the pipeline's stages work on and an OpenAI-compatible provider is sent.
 *
 * Never throws, whatever JSON it is given: the same decode runs for calls
 * that go to Anthropic untouched, and the gateway judges no shape it does not
 * act on. What cannot be carried is `uncarried` (the first thing found) or
 * left out. Linear in the body's size: one pass over messages, their blocks,
 * and the blocks of a tool result; no recursion on the client's nesting.
 *
 * Mapping (system, messages and content: to-chat-messages.ts; tools and
 * tool_choice: to-chat-tools.ts):
 * - model: copied as given ("" when not a string; the caller replaces it);
 * - max_tokens (a positive integer) -> options.maxTokensField, lowered to
 *   options.maxOutputTokens when larger;
 * - stop_sequences (strings) -> stop; temperature, top_p kept; top_k dropped
 *   (Chat Completions has none);
 * - thinking, only when options.reasoning: `enabled` -> reasoning_effort by
 *   budget_tokens (under 4096 low, under 16384 medium, else high: Claude
 *   Code's "think" asks 4000, "think hard" 10000, "ultrathink" 31999);
 *   `adaptive` -> output_config.effort when it is low, medium or high
 *   (xhigh and max -> high), else medium; `disabled` and other types send none;
 * - metadata.user_id -> user, when at most 64 characters (OpenAI's bound for
 *   an end-user id; Claude Code's longer ids are left out rather than risk
 *   a refusal over a field that only helps abuse tracking);
 * - stream: true -> stream with stream_options.include_usage (the usage the
 *   Anthropic events end with);
 * - output_config.format (or the beta's top-level output_format) of type
 *   json_schema -> response_format json_schema, strict, named "output"
 *   (OpenAI requires a name; Anthropic's structured outputs are strict);
 * - every other field (service_tier, context_management, container,
 *   mcp_servers, cache_control, inference_geo, unknown ones) dropped: an
 *   OpenAI-compatible provider may refuse fields it does not know.
 */
export function decodeMessages(body: Record<string, unknown>, options: DecodeOptions): DecodedMessages {
  const problems = new FirstProblem();
  const input: JsonObject = isObject(body) ? body : {};
  if (!isObject(body)) problems.invalid('', 'The request body must be a JSON object.');
  const model = input['model'];
  const chat: ChatRequest = {
    model: typeof model === 'string' ? model : '',
    messages: decodeConversation(input['system'], input['messages'], problems),
  };
  const maxTokens = input['max_tokens'];
  if (typeof maxTokens === 'number' && Number.isInteger(maxTokens) && maxTokens > 0) {
    const limit = options.maxOutputTokens;
    chat[options.maxTokensField] = limit !== undefined && limit > 0 && maxTokens > limit ? limit : maxTokens;
  }
  const stop = input['stop_sequences'];
  if (Array.isArray(stop) && stop.length > 0 && stop.every((s) => typeof s === 'string')) chat['stop'] = stop;
  for (const key of ['temperature', 'top_p']) {
    if (typeof input[key] === 'number') chat[key] = input[key];
  }
  const tools = decodeTools(input['tools'], input['tool_choice'], problems);
  if (tools.tools !== undefined) chat['tools'] = tools.tools;
  if (tools.toolChoice !== undefined) chat['tool_choice'] = tools.toolChoice;
  if (tools.parallelToolCalls !== undefined) chat['parallel_tool_calls'] = tools.parallelToolCalls;
  if (options.reasoning) {
    const effort = reasoningEffort(input['thinking'], input['output_config']);
    if (effort !== undefined) chat['reasoning_effort'] = effort;
  }
  const metadata = input['metadata'];
  const user = isObject(metadata) ? metadata['user_id'] : undefined;
  if (typeof user === 'string' && user !== '' && user.length <= 64) chat['user'] = user;
  const format = responseFormat(input['output_config'], input['output_format']);
  if (format !== undefined) chat['response_format'] = format;
  if (input['stream'] === true) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return { chat, omittedTools: tools.omitted, uncarried: problems.first };
}

/** Budgets below these are low, then medium; above, high. */
const LOW_BELOW = 4096;
const MEDIUM_BELOW = 16384;

function reasoningEffort(thinking: unknown, outputConfig: unknown): string | undefined {
  if (!isObject(thinking)) return undefined;
  if (thinking['type'] === 'enabled') {
    const budget = thinking['budget_tokens'];
    if (typeof budget !== 'number') return 'medium';
    return budget < LOW_BELOW ? 'low' : budget < MEDIUM_BELOW ? 'medium' : 'high';
  }
  if (thinking['type'] !== 'adaptive') return undefined;
  const effort = isObject(outputConfig) ? outputConfig['effort'] : undefined;
  if (effort === 'low' || effort === 'medium' || effort === 'high') return effort;
  return effort === 'xhigh' || effort === 'max' ? 'high' : 'medium';
}

/** Anthropic's structured output format (`{type: "json_schema", schema}`) as OpenAI's response_format. */
function responseFormat(outputConfig: unknown, outputFormat: unknown): JsonObject | undefined {
  const format = isObject(outputConfig) && isObject(outputConfig['format']) ? outputConfig['format'] : outputFormat;
  if (!isObject(format) || format['type'] !== 'json_schema' || !isObject(format['schema'])) return undefined;
  return { type: 'json_schema', json_schema: { name: 'output', schema: format['schema'], strict: true } };
}
