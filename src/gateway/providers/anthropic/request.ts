import { HttpProblem } from '../../../platform/errors.ts';
import { invalidBody } from '../../openai-errors.ts';
import { isObject, type JsonObject } from '../json.ts';
import type { CallContext, ChatRequest, UpstreamRequest } from '../types.ts';
import { joinPath } from '../upstream-path.ts';
import { placeBreakpoints } from './cache-control.ts';
import { translateMessages } from './messages.ts';
import { translateToolChoice, translateTools } from './tools.ts';

/** The Messages API version this translation is written against (sent as `anthropic-version`). */
export const ANTHROPIC_VERSION = '2023-06-01';

export interface AnthropicRequestOptions {
  /** max_tokens when the client gave neither max_completion_tokens nor max_tokens: Anthropic requires one. */
  anthropicDefaultMaxTokens: number;
}

/**
 * An OpenAI chat-completions request as an Anthropic Messages request
 * (POST {base}/messages, x-api-key, anthropic-version). Parameters:
 * - model: the provider's id; messages and system: messages.ts;
 * - max_completion_tokens, else max_tokens, else the configured default -> max_tokens;
 * - stop (a string or a list) -> stop_sequences; temperature, top_p as they are;
 *   top_k (Anthropic's own, sent by some clients) as it is;
 * - tools, tool_choice, parallel_tool_calls: tools.ts;
 * - user (or safety_identifier) -> metadata.user_id; stream as it is;
 * - the prompt-cache plan (ctx.promptCache) -> cache_control breakpoints
 *   (cache-control.ts); the client's own cache_control on tools and content
 *   parts is carried over as it is;
 * - n above 1: refused, Anthropic returns one answer;
 * - response_format json_object or json_schema: refused with a 400, since
 *   Anthropic has no equivalent and an instruction in the prompt would
 *   silently weaken a guarantee the client relies on; "text" is accepted;
 * - reasoning_effort: ignored. Mapping it to extended thinking would change
 *   what the request may contain (no temperature, no forced tool choice) and
 *   require thinking blocks, which OpenAI messages cannot carry, to be sent
 *   back on every tool-use turn; the answer is the model's without thinking.
 * Every other field (OpenAI-only: frequency_penalty, logprobs, seed,
 * stream_options, store, ...) is dropped: Anthropic refuses unknown fields.
 */
export function chatRequest(request: ChatRequest, ctx: CallContext, options: AnthropicRequestOptions): UpstreamRequest {
  checkUnsupported(request);
  if (!Array.isArray(request.messages)) throw invalidBody('messages', 'messages must be an array.');
  const { system, turns, ends } = translateMessages(request.messages);
  const body: JsonObject = { model: ctx.model, max_tokens: maxTokens(request, options) };
  if (system.length > 0) body['system'] = system;
  body['messages'] = turns;
  const stop = request['stop'];
  if (typeof stop === 'string') body['stop_sequences'] = [stop];
  else if (Array.isArray(stop) && stop.length > 0) body['stop_sequences'] = stop;
  for (const key of ['temperature', 'top_p', 'top_k']) {
    if (typeof request[key] === 'number') body[key] = request[key];
  }
  const tools = translateTools(request['tools']);
  if (tools !== undefined && tools.length > 0) {
    body['tools'] = tools;
    const choice = translateToolChoice(request['tool_choice'], request['parallel_tool_calls']);
    if (choice !== undefined) body['tool_choice'] = choice;
  }
  if (ctx.promptCache !== undefined) placeBreakpoints({ tools, system, turns, ends }, ctx.promptCache);
  const user = typeof request['user'] === 'string' ? request['user'] : request['safety_identifier'];
  if (typeof user === 'string' && user !== '') body['metadata'] = { user_id: user };
  if (request.stream === true) body['stream'] = true;
  return {
    path: joinPath(ctx.baseUrl, '/messages'),
    headers: { 'x-api-key': ctx.apiKey, 'anthropic-version': ANTHROPIC_VERSION, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

function maxTokens(request: ChatRequest, options: AnthropicRequestOptions): number {
  for (const key of ['max_completion_tokens', 'max_tokens']) {
    const value = request[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalidBody(key, `${key} must be a positive integer.`);
    return value;
  }
  return options.anthropicDefaultMaxTokens;
}

function checkUnsupported(request: ChatRequest): void {
  const n = request['n'];
  if (n !== undefined && n !== null && n !== 1) {
    throw unsupported('n', 'Anthropic models return one choice per request; send n: 1 or leave it out.');
  }
  const format = request['response_format'];
  const formatType = isObject(format) ? format['type'] : undefined;
  if (format !== undefined && format !== null && formatType !== 'text') {
    throw unsupported(
      'response_format',
      `response_format "${String(formatType)}" is not supported for Anthropic models; describe the JSON you want in the prompt, or use a tool with an input schema.`,
    );
  }
}

const unsupported = (param: string, message: string) =>
  new HttpProblem(400, 'unsupported_parameter', message, { type: 'invalid_request_error', param });
