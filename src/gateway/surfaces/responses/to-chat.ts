import type { HttpProblem } from '../../../platform/errors.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import type { ChatRequest } from '../../providers/types.ts';
import { FirstProblem } from '../messages/uncarried.ts';
import type { ResponsesToolName } from './tool-names.ts';
import { decodeInput } from './to-chat-items.ts';
import { decodeTools } from './to-chat-tools.ts';

export interface ResponsesToChatOptions {
  /** The target takes `reasoning_effort` (OpenAI GPT-5 / o-series through Chat Completions): `reasoning.effort` maps to it; else left out. */
  reasoning: boolean;
  /** Which field carries max_output_tokens. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** The target model's documented output limit (catalog maxOutput): a larger max_output_tokens is lowered to it. */
  maxOutputTokens: number | undefined;
  /** The target is Anthropic (through the gateway's Anthropic adapter): web_search tools are kept as a marker (`webSearch`). */
  anthropic: boolean;
}

export interface DecodedResponses {
  /** The request in Chat Completions form: what the stages read and a provider other than OpenAI is sent. */
  chat: ChatRequest;
  /** Built-in tools left out of this call, by type, each once: for a response header. */
  omittedTools: string[];
  /** A web_search / web_search_preview tool was asked for and the target is Anthropic: the caller adds Anthropic's server tool. */
  webSearch: boolean;
  /** Reasoning items left out (the target cannot take them). */
  droppedReasoning: number;
  /**
   * The first piece of the request that cannot be carried, as the 400 to
   * answer if the call goes through Chat Completions (code
   * `unsupported_content`, or `invalid_request_body` for a shape the
   * Responses API refuses too; `param` says where). Undefined when all of it can be.
   */
  uncarried: HttpProblem | undefined;
  /** Chat name -> Responses name of each namespaced function (tool-names.ts): the ResponseContext's `toolNames`. */
  toolNames: ReadonlyMap<string, ResponsesToolName>;
  /** For each message of `chat`, the input items it was made from (to-chat-items.ts DecodedInput.groups). */
  groups: number[][];
}

/**
 * A Responses API request (POST /v1/responses) as the Chat Completions
 * request the pipeline's stages work on and a provider other than OpenAI is
 * sent (through its Chat Completions adapter). `input` is already expanded
 * from `previous_response_id` by the caller.
 *
 * Never throws, whatever JSON it is given: the same decode runs for calls
 * that go to OpenAI untouched, and what cannot be carried is `uncarried`
 * (the first thing found) or left out. Linear in the body's size: one pass
 * over the items, their parts and the tools; no recursion on the client's nesting.
 *
 * Mapping (instructions, input: to-chat-items.ts; tools, tool_choice,
 * parallel_tool_calls: to-chat-tools.ts):
 * - model: copied as given ("" when not a string; the caller replaces it);
 * - max_output_tokens (a positive integer) -> options.maxTokensField,
 *   lowered to options.maxOutputTokens when larger;
 * - temperature, top_p, user kept;
 * - text.format json_schema {name, schema, strict, description} ->
 *   response_format json_schema (named "output" when it has no name, as
 *   OpenAI requires one); json_object -> response_format json_object; text -> none;
 * - reasoning.effort -> reasoning_effort, only when options.reasoning;
 * - stream: true -> stream with stream_options.include_usage (the usage
 *   response.completed carries);
 * - every other field dropped: metadata (Chat's needs `store`), store,
 *   include, previous_response_id, truncation, prompt_cache_key (the
 *   gateway's prompt-cache stage sets its own), client_metadata,
 *   service_tier, background, text.verbosity, unknown ones: a provider other
 *   than OpenAI may refuse fields it does not know.
 */
export function decodeResponses(body: JsonObject, options: ResponsesToChatOptions): DecodedResponses {
  const problems = new FirstProblem();
  const request: JsonObject = isObject(body) ? body : {};
  if (!isObject(body)) problems.invalid('', 'The request body must be a JSON object.');
  const model = request['model'];
  const input = decodeInput(request['instructions'], request['input'], problems);
  const chat: ChatRequest = { model: typeof model === 'string' ? model : '', messages: input.messages };
  const maxTokens = request['max_output_tokens'];
  if (typeof maxTokens === 'number' && Number.isInteger(maxTokens) && maxTokens > 0) {
    const limit = options.maxOutputTokens;
    chat[options.maxTokensField] = limit !== undefined && limit > 0 && maxTokens > limit ? limit : maxTokens;
  }
  for (const key of ['temperature', 'top_p']) {
    if (typeof request[key] === 'number') chat[key] = request[key];
  }
  const tools = decodeTools(request['tools'], request['tool_choice'], request['parallel_tool_calls'], options.anthropic, problems);
  if (tools.tools !== undefined) chat['tools'] = tools.tools;
  if (tools.toolChoice !== undefined) chat['tool_choice'] = tools.toolChoice;
  if (tools.parallelToolCalls !== undefined) chat['parallel_tool_calls'] = tools.parallelToolCalls;
  const reasoning = request['reasoning'];
  if (options.reasoning && isObject(reasoning) && typeof reasoning['effort'] === 'string') chat['reasoning_effort'] = reasoning['effort'];
  if (typeof request['user'] === 'string' && request['user'] !== '') chat['user'] = request['user'];
  const format = responseFormat(request['text'], problems);
  if (format !== undefined) chat['response_format'] = format;
  if (request['stream'] === true) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return {
    chat,
    omittedTools: tools.omitted,
    webSearch: tools.webSearch,
    droppedReasoning: input.droppedReasoning,
    uncarried: problems.first,
    toolNames: tools.toolNames,
    groups: input.groups,
  };
}

/** `text.format` as Chat's response_format; undefined for plain text. */
function responseFormat(text: unknown, problems: FirstProblem): JsonObject | undefined {
  const format = isObject(text) ? text['format'] : undefined;
  if (!isObject(format)) return undefined;
  const type = format['type'];
  if (type === 'json_object') return { type: 'json_object' };
  if (type !== 'json_schema') return undefined;
  if (!isObject(format['schema'])) {
    problems.invalid('text.format.schema', 'text.format.schema must be a JSON schema object.');
    return undefined;
  }
  const schema: JsonObject = { name: typeof format['name'] === 'string' && format['name'] !== '' ? format['name'] : 'output' };
  if (typeof format['description'] === 'string') schema['description'] = format['description'];
  schema['schema'] = format['schema'];
  if (typeof format['strict'] === 'boolean') schema['strict'] = format['strict'];
  return { type: 'json_schema', json_schema: schema };
}
