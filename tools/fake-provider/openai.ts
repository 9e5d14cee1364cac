import type { IncomingHttpHeaders } from 'node:http';
import { type Content, contentFor, type OfferedTool, type Reply, splitArguments, splitText, textOf } from './answer.ts';
import type { Behaviour } from './behaviour.ts';
import { errorAnswer, streamErrorEvent } from './faults.ts';
import type { BilledTokens } from './ledger.ts';
import { openAiKeyRefusal } from './openai-auth.ts';
import type { CacheFigures } from './prompt-cache.ts';
import { SSE_HEADERS, type StreamPlan, sseData } from './sse.ts';

/**
 * OpenAI chat completions (API reference: "Create chat completion", "The
 * chat completion object", "The chat completion chunk object").
 *
 * Tool calls: when the request offers `tools` and either `tool_choice` is
 * "required" or names a function, or the last user text contains "call
 * tool", the answer calls the named (else the first) tool, with arguments
 * fitted to its JSON Schema. `tool_choice: "none"` never calls.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };

type Body = Record<string, unknown>;
type Message = { role?: unknown; content?: unknown };

export interface OpenAIContext {
  behaviour: Behaviour;
  requestId: string;
  id: (prefix: string) => string;
  /** When set, the only accepted bearer key. */
  apiKey: string | undefined;
  /** Set when behaviour.promptCache is on: the prompt-cache simulation (prompt-cache-openai.ts) for a valid request. */
  simulate?: ((body: Body, apiKey: string) => CacheFigures) | undefined;
  /** Told the usage of every answer (the fake's ledger). */
  bill?: ((model: string, usage: Omit<BilledTokens, 'calls'>) => void) | undefined;
}

export function chatCompletion(body: Body, headers: IncomingHttpHeaders, ctx: OpenAIContext): Reply {
  const fail = (kind: 'invalid_request', message: string, param: string | null = null): Reply => ({
    kind: 'answer',
    answer: errorAnswer('openai', kind, ctx.requestId, message, param),
  });
  const refusal = openAiKeyRefusal(headers, ctx.apiKey, ctx.requestId);
  if (refusal) return { kind: 'answer', answer: refusal };
  const auth = headers.authorization as string;
  if (typeof body['model'] !== 'string') return fail('invalid_request', 'you must provide a model parameter', 'model');
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) return fail('invalid_request', "'messages' is a required property", 'messages');

  let chars = 0;
  let lastText = '';
  for (const m of messages as Message[]) {
    const text = textOf(m?.content);
    chars += text.length;
    if (m?.role === 'user' || m?.role === 'tool') lastText = text;
  }
  const b = simulated(ctx, body, auth.slice(7));
  const content = contentFor(b, lastText, chars, toolToCall(body, lastText), ctx.id('call_'));
  const model = body['model'];
  ctx.bill?.(String(model), {
    promptTokens: content.promptTokens,
    cachedTokens: b.cachedTokens,
    cacheWriteTokens: 0,
    completionTokens: content.completionTokens,
    reasoningTokens: b.reasoningTokens,
  });
  const id = ctx.id('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  if (body['stream'] === true) {
    const includeUsage = (body['stream_options'] as { include_usage?: unknown } | undefined)?.include_usage === true;
    return { kind: 'stream', headers: { ...SSE_HEADERS, 'x-request-id': ctx.requestId }, plan: streamPlan(content, { id, created, model }, includeUsage, b) };
  }
  const message = content.tool
    ? { role: 'assistant', content: null, tool_calls: [toolCall(content.tool)], refusal: null, annotations: [] }
    : { role: 'assistant', content: content.text, refusal: null, annotations: [] };
  if (ctx.behaviour.reasoning !== undefined) Object.assign(message, { reasoning_content: ctx.behaviour.reasoning });
  const completion = {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: content.tool ? 'tool_calls' : 'stop' }],
    usage: usage(content, b),
    service_tier: 'default',
    system_fingerprint: 'fp_fake',
  };
  return { kind: 'answer', answer: { status: 200, headers: { ...JSON_HEADERS, 'x-request-id': ctx.requestId }, body: JSON.stringify(completion) } };
}

/** The behaviour with the simulation's token counts, when it is on: prompt_tokens includes the cached ones. */
function simulated(ctx: OpenAIContext, body: Body, apiKey: string): Behaviour {
  if (!ctx.simulate) return ctx.behaviour;
  const figures = ctx.simulate(body, apiKey);
  return { ...ctx.behaviour, promptTokens: figures.promptTokens, cachedTokens: figures.cacheReadTokens, cacheCreationTokens: 0 };
}

function toolToCall(body: Body, lastText: string): OfferedTool | undefined {
  const tools = body['tools'];
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const choice = body['tool_choice'];
  const named = (choice as { function?: { name?: unknown } } | undefined)?.function?.name;
  const forced = choice === 'required' || typeof named === 'string';
  if (choice === 'none' || !(forced || lastText.includes('call tool'))) return undefined;
  const fns = (tools as { function?: { name?: unknown; parameters?: unknown } }[]).map((t) => t?.function).filter((f) => typeof f?.name === 'string');
  const fn = fns.find((f) => f!.name === named) ?? fns[0];
  return fn ? { name: fn.name as string, schema: fn.parameters } : undefined;
}

const toolCall = (tool: NonNullable<Content['tool']>) => ({ id: tool.id, type: 'function', function: { name: tool.name, arguments: tool.arguments } });

/** `usage` of the chat completion object; prompt_tokens includes the cached ones, completion_tokens the reasoning ones. */
function usage(content: Content, b: Behaviour) {
  return {
    prompt_tokens: content.promptTokens,
    completion_tokens: content.completionTokens,
    total_tokens: content.promptTokens + content.completionTokens,
    prompt_tokens_details: { cached_tokens: b.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: b.reasoningTokens, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    ...b.usageFields,
  };
}

/**
 * chat.completion.chunk events: the first carries the role (and, for a tool
 * call, its id and name), then content or argument deltas, then an empty
 * delta with finish_reason; with stream_options.include_usage every chunk has
 * `usage: null` and a last chunk has `choices: []` and the usage; then
 * `data: [DONE]`.
 */
function streamPlan(content: Content, meta: { id: string; created: number; model: unknown }, includeUsage: boolean, b: Behaviour): StreamPlan {
  const chunk = (choices: unknown[], usageValue?: unknown) =>
    sseData({
      id: meta.id,
      object: 'chat.completion.chunk',
      created: meta.created,
      model: meta.model,
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
      choices,
      ...(includeUsage ? { usage: usageValue ?? null } : {}),
    });
  const choice = (delta: unknown, finish: string | null = null) => [{ index: 0, delta, logprobs: null, finish_reason: finish }];
  const { tool } = content;
  const head = tool
    ? chunk(choice({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: tool.id, type: 'function', function: { name: tool.name, arguments: '' } }], refusal: null }))
    : chunk(choice({ role: 'assistant', content: '', refusal: null }));
  const reasoning = b.reasoning === undefined ? [] : splitText(b.reasoning, undefined).map((part) => chunk(choice({ reasoning_content: part })));
  const deltas = tool
    ? splitArguments(tool.arguments, b.chunks).map((part) => chunk(choice({ tool_calls: [{ index: 0, function: { arguments: part } }] })))
    : splitText(content.text, b.chunks).map((part) => chunk(choice({ content: part })));
  const tail = [chunk(choice({}, tool ? 'tool_calls' : 'stop'))];
  if (includeUsage) tail.push(chunk([], usage(content, b)));
  tail.push('data: [DONE]\n\n');
  return {
    head: [head, ...reasoning],
    deltas,
    tail,
    error: streamErrorEvent('openai'),
    garbage: `data: {"id":"${meta.id}","object":"chat.completion.chunk","choices":[{"delta":\n\n`,
    delta: (text) => chunk(choice({ content: text })),
  };
}

/** GET /v1/models in OpenAI's list shape. */
export function modelList(models: readonly string[]): string {
  return JSON.stringify({ object: 'list', data: models.map((id) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake-provider' })) });
}
