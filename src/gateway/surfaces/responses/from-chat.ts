import { isObject, type JsonObject } from '../../providers/json.ts';
import { openAiUsage } from '../../providers/openai-compatible/usage.ts';
import type { TokenUsage } from '../../providers/types.ts';
import { responsesToolName, type ToolNames } from './tool-names.ts';

/** What a response object echoes and is named by, besides the answer. */
export interface ResponseContext {
  /** The gateway's response id ("resp_..."), minted by the caller; item ids derive from it. */
  id: string;
  /** Unix seconds. */
  createdAt: number;
  /** The model as the client asked for it: named until the answer names its own. */
  model: string;
  /** The client's Responses request: the response echoes its settings (responseObject). */
  request: JsonObject;
  /** Chat function name -> Responses name, for namespaced functions (decodeResponses' toolNames). */
  toolNames?: ToolNames | undefined;
  /** The provider's name, for the error a garbled stream ends with; "provider" when not given. */
  provider?: string | undefined;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** Where an answer ended, in Responses terms. */
export interface ResponseEnd {
  status: ResponseStatus;
  /** `incomplete_details`: why an incomplete response stopped. */
  incomplete: { reason: string } | null;
  /** `error`: why a failed response failed. */
  error: { code: string; message: string } | null;
}

/**
 * Chat Completions' finish_reason as a response's end: length -> incomplete
 * (max_output_tokens), content_filter -> incomplete (content_filter),
 * anything else (stop, tool_calls, none) -> completed.
 */
export function endOf(finishReason: unknown): ResponseEnd {
  if (finishReason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' }, error: null };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' }, error: null };
  return { status: 'completed', incomplete: null, error: null };
}

/**
 * An output item's id: its kind's prefix, then the response id's own part and
 * the item's index in hex (4 digits at least), so ids are unique within a
 * response and across responses, and the same answer gets the same ids
 * whole and streamed.
 */
export function itemId(responseId: string, prefix: 'msg' | 'fc' | 'rs' | 'call', index: number): string {
  const base = responseId.startsWith('resp_') ? responseId.slice('resp_'.length) : responseId;
  return `${prefix}_${base}${index.toString(16).padStart(4, '0')}`;
}

export const outputTextPart = (text: string): JsonObject => ({ type: 'output_text', text, annotations: [], logprobs: [] });
export const refusalPart = (refusal: string): JsonObject => ({ type: 'refusal', refusal });
export const summaryPart = (text: string): JsonObject => ({ type: 'summary_text', text });

export function messageItem(id: string, status: string, content: JsonObject[]): JsonObject {
  return { id, type: 'message', status, role: 'assistant', content };
}

/** A function call, named as the Responses API names it (with its namespace when it has one). */
export function functionCallItem(id: string, status: string, callId: string, chatName: string, args: string, names: ToolNames | undefined): JsonObject {
  const name = responsesToolName(chatName, names);
  const item: JsonObject = { id, type: 'function_call', status, call_id: callId, name: name.name };
  if (name.namespace !== undefined) item['namespace'] = name.namespace;
  item['arguments'] = args;
  return item;
}

export function reasoningItem(id: string, summary: JsonObject[]): JsonObject {
  return { id, type: 'reasoning', summary };
}

/**
 * Token counts as a response's usage: input_tokens with the cached ones
 * inside them (input_tokens_details.cached_tokens), output_tokens with the
 * reasoning ones inside (output_tokens_details.reasoning_tokens), as Chat's
 * prompt_tokens and completion_tokens count them; plus the gateway's `cost`
 * (USD) when the answer's usage carried one. Null when there is no usage.
 */
export function responseUsage(usage: TokenUsage | undefined, cost: unknown): JsonObject | null {
  if (usage === undefined) return null;
  const out: JsonObject = {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
  if (typeof cost === 'number' && Number.isFinite(cost)) out['cost'] = cost;
  return out;
}

/**
 * The response object ("The response object", API reference): every field
 * present, the request's settings echoed with OpenAI's defaults where the
 * client set none (temperature and top_p 1, tool_choice "auto", truncation
 * "disabled", store and parallel_tool_calls true, text format "text").
 */
export function responseObject(ctx: ResponseContext, model: string, end: ResponseEnd, output: JsonObject[], usage: JsonObject | null): JsonObject {
  const r = ctx.request;
  const reasoning = isObject(r['reasoning']) ? r['reasoning'] : {};
  const text = isObject(r['text']) ? r['text'] : {};
  return {
    id: ctx.id,
    object: 'response',
    created_at: ctx.createdAt,
    status: end.status,
    error: end.error,
    incomplete_details: end.incomplete,
    instructions: typeof r['instructions'] === 'string' ? r['instructions'] : null,
    max_output_tokens: typeof r['max_output_tokens'] === 'number' ? r['max_output_tokens'] : null,
    model,
    output,
    parallel_tool_calls: typeof r['parallel_tool_calls'] === 'boolean' ? r['parallel_tool_calls'] : true,
    previous_response_id: typeof r['previous_response_id'] === 'string' ? r['previous_response_id'] : null,
    reasoning: { effort: stringOrNull(reasoning['effort']), summary: stringOrNull(reasoning['summary']) },
    store: typeof r['store'] === 'boolean' ? r['store'] : true,
    temperature: typeof r['temperature'] === 'number' ? r['temperature'] : 1,
    text: { format: isObject(text['format']) ? text['format'] : { type: 'text' } },
    tool_choice: r['tool_choice'] ?? 'auto',
    tools: Array.isArray(r['tools']) ? r['tools'] : [],
    top_p: typeof r['top_p'] === 'number' ? r['top_p'] : 1,
    truncation: typeof r['truncation'] === 'string' ? r['truncation'] : 'disabled',
    usage,
    user: typeof r['user'] === 'string' ? r['user'] : null,
    metadata: isObject(r['metadata']) ? r['metadata'] : {},
  };
}

const stringOrNull = (value: unknown) => (typeof value === 'string' ? value : null);

/**
 * A complete Chat Completions answer (the `chat.completion` JSON, as an
 * adapter's chatResponse gives it) as a response object. Output items, in
 * this order, as ResponsesFromChat streams the same answer:
 * `reasoning_content` (DeepSeek, vLLM; OpenRouter's `reasoning`) -> a
 * reasoning item with one summary_text part (no encrypted_content: there is
 * none to give); the text and the refusal -> one message item with an
 * output_text part and a refusal part; each tool call -> a function_call
 * item, named back through ctx.toolNames. status from the finish_reason
 * (endOf); the last item of an incomplete response is itself `incomplete`.
 * model: the answer's, else ctx.model. An answer with no choice (which the
 * adapters refuse before this) gives a response with no output.
 */
export function responseFromChat(chat: JsonObject, ctx: ResponseContext): JsonObject {
  const choices = chat['choices'];
  const choice = Array.isArray(choices) && isObject(choices[0]) ? choices[0] : {};
  const message = isObject(choice['message']) ? choice['message'] : {};
  const end = endOf(choice['finish_reason']);
  const output: JsonObject[] = [];
  const reasoning = message['reasoning_content'] ?? message['reasoning'];
  if (typeof reasoning === 'string' && reasoning !== '') output.push(reasoningItem(itemId(ctx.id, 'rs', output.length), [summaryPart(reasoning)]));
  const content: JsonObject[] = [];
  const text = messageText(message['content']);
  if (text !== '') content.push(outputTextPart(text));
  if (typeof message['refusal'] === 'string' && message['refusal'] !== '') content.push(refusalPart(message['refusal']));
  if (content.length > 0) output.push(messageItem(itemId(ctx.id, 'msg', output.length), 'completed', content));
  const calls = message['tool_calls'];
  if (Array.isArray(calls)) {
    for (const call of calls) {
      const fn = isObject(call) ? call['function'] : undefined;
      if (!isObject(call) || !isObject(fn)) continue;
      const index = output.length;
      const callId = typeof call['id'] === 'string' && call['id'] !== '' ? call['id'] : itemId(ctx.id, 'call', index);
      const name = typeof fn['name'] === 'string' ? fn['name'] : '';
      const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
      output.push(functionCallItem(itemId(ctx.id, 'fc', index), 'completed', callId, name, args, ctx.toolNames));
    }
  }
  const last = output[output.length - 1];
  if (end.status === 'incomplete' && last !== undefined && last['status'] !== undefined) last['status'] = 'incomplete';
  const usage = chat['usage'];
  const model = typeof chat['model'] === 'string' && chat['model'] !== '' ? chat['model'] : ctx.model;
  return responseObject(ctx, model, end, output, responseUsage(openAiUsage(usage), isObject(usage) ? usage['cost'] : undefined));
}

/** Chat's message content as text: a string, or its text parts joined. */
function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) if (isObject(part) && typeof part['text'] === 'string') text += part['text'];
  return text;
}
