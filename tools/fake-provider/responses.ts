import type { IncomingHttpHeaders } from 'node:http';
import type { ThinkingSigner } from './anthropic-agent.ts';
import { type Content, contentFor, type OfferedTool, type Reply, splitArguments, splitText, textOf } from './answer.ts';
import type { Behaviour } from './behaviour.ts';
import { type Answer, errorAnswer, errorPayload } from './faults.ts';
import type { OpenAIContext } from './openai.ts';
import { openAiKeyRefusal } from './openai-auth.ts';
import { checkReasoning, reasoningItem, scriptedResponse } from './responses-agent.ts';
import { SSE_HEADERS, type StreamPlan, sseEvent } from './sse.ts';

/**
 * OpenAI Responses (API reference: "Create a model response", "The response
 * object", "Streaming events"). Stateless: `previous_response_id` is
 * accepted and ignored (the answer echoes it), so a test can see what a
 * client sent without the fake pretending to keep a conversation.
 *
 * Input: a string, or items: messages (string content or input_text /
 * input_image parts), function_call, function_call_output, reasoning; the
 * last user message's text or function_call_output's output is what the
 * answer echoes. Tool calls as on the Chat side: function tools offered and
 * `tool_choice` "required" or `{type: "function", name}`, or the last text
 * contains "call tool"; `tool_choice: "none"` never calls. A scripted agent
 * turn (behaviour `agent`) and reasoning items with encrypted_content checked
 * on the way back (behaviour `thinking`): see responses-agent.ts.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };

type Body = Record<string, unknown>;
type Item = Record<string, unknown>;

/** The OpenAI context, and the signer that seals the reasoning items of answers and checks the ones sent back (behaviour `thinking`). */
export interface ResponsesContext extends OpenAIContext {
  signer: ThinkingSigner;
}

export function createResponse(body: Body, headers: IncomingHttpHeaders, ctx: ResponsesContext): Reply {
  const fail = (message: string, param: string): Reply => ({ kind: 'answer', answer: errorAnswer('openai', 'invalid_request', ctx.requestId, message, param) });
  const refusal = openAiKeyRefusal(headers, ctx.apiKey, ctx.requestId);
  if (refusal) return { kind: 'answer', answer: refusal };
  if (typeof body['model'] !== 'string') return fail("Missing required parameter: 'model'.", 'model');
  const input = body['input'];
  if (typeof input !== 'string' && !Array.isArray(input)) return fail("Invalid type for 'input': expected a string or an array of input items.", 'input');
  const instructions = typeof body['instructions'] === 'string' ? body['instructions'] : '';

  let chars = instructions.length;
  let lastText = '';
  if (typeof input === 'string') {
    chars += input.length;
    lastText = input;
  } else {
    for (const raw of input as unknown[]) {
      if (raw === null || typeof raw !== 'object') continue;
      const item = raw as Item;
      const type = item['type'] ?? 'message'; // an item with a role and no type is a message (EasyInputMessage)
      if (type === 'message') {
        const text = textOf(item['content']);
        chars += text.length;
        if (item['role'] === 'user') lastText = text;
      } else if (type === 'function_call_output') {
        const text = typeof item['output'] === 'string' ? item['output'] : textOf(item['output']);
        chars += text.length;
        lastText = text;
      } else if (type === 'function_call' && typeof item['arguments'] === 'string') {
        chars += item['arguments'].length;
      }
    }
  }

  const b = ctx.behaviour;
  if (b.thinking !== undefined && Array.isArray(input)) {
    const problem = checkReasoning(input, ctx.signer);
    if (problem !== undefined) return { kind: 'answer', answer: invalidEncryptedContent(problem, ctx.requestId) };
  }
  const content = answerContent(b, body, lastText, chars, ctx.id('call_'));
  const model = body['model'];
  ctx.bill?.(model, {
    promptTokens: content.promptTokens,
    cachedTokens: b.cachedTokens,
    cacheWriteTokens: 0,
    completionTokens: content.completionTokens,
    reasoningTokens: b.reasoningTokens,
  });
  const reasoning = b.thinking === undefined ? undefined : reasoningItem(ctx.id('rs_'), b.thinking, body, ctx.signer);
  const item: Item = content.tool
    ? { id: ctx.id('fc_'), type: 'function_call', status: 'completed', arguments: content.tool.arguments, call_id: content.tool.id, name: content.tool.name }
    : { id: ctx.id('msg_'), type: 'message', status: 'completed', role: 'assistant', content: [outputText(content.text)] };
  const response = responseObject(body, ctx.id('resp_'), model, instructions);
  const done = { ...response, status: 'completed', output: reasoning ? [reasoning, item] : [item], usage: usage(content, b) };
  if (body['stream'] === true) {
    return { kind: 'stream', headers: { ...SSE_HEADERS, 'x-request-id': ctx.requestId }, plan: streamPlan(response, done, reasoning, item, content, b) };
  }
  return { kind: 'answer', answer: { status: 200, headers: { ...JSON_HEADERS, 'x-request-id': ctx.requestId }, body: JSON.stringify(done) } };
}

const outputText = (text: string) => ({ type: 'output_text', annotations: [], logprobs: [], text });

/** The scripted agent's move when there is one, else the echo or the tool call. */
function answerContent(b: Behaviour, body: Body, lastText: string, chars: number, toolId: string): Content {
  const turn = b.agent ? scriptedResponse(b.agent, body) : undefined;
  if (turn === undefined) return contentFor(b, lastText, chars, toolToCall(body, lastText), toolId);
  if ('text' in turn) return contentFor({ ...b, text: turn.text }, lastText, chars, undefined, toolId);
  const base = contentFor(b, lastText, chars, undefined, toolId);
  return { ...base, text: '', tool: { id: toolId, name: turn.call.tool, arguments: JSON.stringify(turn.call.input) }, completionTokens: b.completionTokens ?? 10 };
}

/** OpenAI's 400 for a reasoning item whose encrypted_content it did not make (or that was changed). */
function invalidEncryptedContent(message: string, requestId: string): Answer {
  const { error } = errorPayload('openai', 'invalid_request', message) as { error: object };
  return { status: 400, headers: { ...JSON_HEADERS, 'x-request-id': requestId }, body: JSON.stringify({ error: { ...error, code: 'invalid_encrypted_content' } }) };
}

/** The response object before any output: what response.created and response.in_progress carry; request fields echoed as OpenAI does. */
function responseObject(body: Body, id: string, model: string, instructions: string) {
  const given = (name: string, fallback: unknown) => (body[name] === undefined ? fallback : body[name]);
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: instructions === '' ? null : instructions,
    max_output_tokens: given('max_output_tokens', null),
    model,
    output: [] as unknown[],
    parallel_tool_calls: given('parallel_tool_calls', true),
    previous_response_id: given('previous_response_id', null),
    reasoning: given('reasoning', { effort: null, summary: null }),
    service_tier: 'default',
    store: given('store', true),
    temperature: given('temperature', 1),
    text: given('text', { format: { type: 'text' } }),
    tool_choice: given('tool_choice', 'auto'),
    tools: given('tools', []),
    top_p: given('top_p', 1),
    truncation: given('truncation', 'disabled'),
    usage: null as unknown,
    user: given('user', null),
    metadata: given('metadata', {}),
  };
}

/** Function tools of the Responses shape (`{type: "function", name, parameters}`, flat, unlike Chat's). */
function toolToCall(body: Body, lastText: string): OfferedTool | undefined {
  const tools = body['tools'];
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const choice = body['tool_choice'];
  const named = (choice as { type?: unknown; name?: unknown } | undefined)?.type === 'function' ? (choice as { name?: unknown }).name : undefined;
  const forced = choice === 'required' || typeof named === 'string';
  if (choice === 'none' || !(forced || lastText.includes('call tool'))) return undefined;
  const fns = (tools as { type?: unknown; name?: unknown; parameters?: unknown }[]).filter((t) => t?.type === 'function' && typeof t.name === 'string');
  const fn = fns.find((f) => f.name === named) ?? fns[0];
  return fn ? { name: fn.name as string, schema: fn.parameters } : undefined;
}

/** input_tokens includes the cached ones, output_tokens the reasoning ones, as in Chat's usage. */
function usage(content: Content, b: OpenAIContext['behaviour']) {
  return {
    input_tokens: content.promptTokens,
    input_tokens_details: { cached_tokens: b.cachedTokens },
    output_tokens: content.completionTokens,
    output_tokens_details: { reasoning_tokens: b.reasoningTokens },
    total_tokens: content.promptTokens + content.completionTokens,
    ...b.usageFields,
  };
}

/**
 * Named SSE events (`event: <type>`), each with its sequence_number, from 0:
 * response.created, response.in_progress; the reasoning item when there is
 * one (output_item.added, reasoning_summary_part.added,
 * reasoning_summary_text.delta... .done, reasoning_summary_part.done when it
 * has a summary, output_item.done), then the answer's item: output_item.added, then
 * for a message content_part.added, output_text.delta..., output_text.done,
 * content_part.done; for a function call function_call_arguments.delta...,
 * .done; then output_item.done and response.completed. No [DONE]: the
 * Responses stream ends with the connection. The stream-error fault sends an
 * `error` event then response.failed, numbered from where the cut falls.
 */
function streamPlan(start: ReturnType<typeof responseObject>, done: object, reasoning: Item | undefined, item: Item, content: Content, b: Behaviour): StreamPlan {
  let seq = 0;
  const event = (type: string, fields: object) => sseEvent(type, { type, sequence_number: seq++, ...fields });
  const index = reasoning ? 1 : 0;
  const itemId = item['id'] as string;
  const at = { item_id: itemId, output_index: index };
  const head = [event('response.created', { response: start }), event('response.in_progress', { response: start })];
  if (reasoning) head.push(...reasoningEvents(reasoning, event));
  let deltas: string[];
  let tail: string[];
  if (content.tool) {
    head.push(event('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } }));
    deltas = splitArguments(content.tool.arguments, b.chunks).map((delta) => event('response.function_call_arguments.delta', { ...at, delta }));
    tail = [event('response.function_call_arguments.done', { ...at, name: content.tool.name, arguments: content.tool.arguments })];
  } else {
    head.push(event('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } }));
    head.push(event('response.content_part.added', { ...at, content_index: 0, part: outputText('') }));
    deltas = splitText(content.text, b.chunks).map((delta) => event('response.output_text.delta', { ...at, content_index: 0, delta, logprobs: [] }));
    tail = [
      event('response.output_text.done', { ...at, content_index: 0, text: content.text, logprobs: [] }),
      event('response.content_part.done', { ...at, content_index: 0, part: outputText(content.text) }),
    ];
  }
  tail.push(event('response.output_item.done', { output_index: index, item }), event('response.completed', { response: done }));
  // The fault's events follow the last delta sent, so they are numbered from there.
  const sentDeltas = Math.min(b.faultAfterChunks, deltas.length);
  seq = head.length + sentDeltas;
  const failure = errorPayload('openai', 'server') as { error: { message: string } };
  const error =
    event('error', { code: 'server_error', message: failure.error.message, param: null }) +
    event('response.failed', { response: { ...start, status: 'failed', error: { code: 'server_error', message: failure.error.message } } });
  return {
    head,
    deltas,
    tail,
    error,
    garbage: `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":\n\n`,
    // A flood repeats one piece, so its sequence_number does not move on.
    delta: (text) => sseEvent('response.output_text.delta', { type: 'response.output_text.delta', sequence_number: head.length, ...at, content_index: 0, delta: text, logprobs: [] }),
  };
}

/** The events of the reasoning item at output_index 0: added (no summary, no encrypted_content yet), its summary part word by word, done (the whole item). */
function reasoningEvents(reasoning: Item, event: (type: string, fields: object) => string): string[] {
  const at = { item_id: reasoning['id'], output_index: 0 };
  const out = [event('response.output_item.added', { output_index: 0, item: { id: reasoning['id'], type: 'reasoning', summary: [] } })];
  for (const [summary_index, part] of (reasoning['summary'] as { text: string }[]).entries()) {
    out.push(event('response.reasoning_summary_part.added', { ...at, summary_index, part: { type: 'summary_text', text: '' } }));
    for (const delta of splitText(part.text, undefined)) out.push(event('response.reasoning_summary_text.delta', { ...at, summary_index, delta }));
    out.push(event('response.reasoning_summary_text.done', { ...at, summary_index, text: part.text }));
    out.push(event('response.reasoning_summary_part.done', { ...at, summary_index, part: { type: 'summary_text', text: part.text } }));
  }
  out.push(event('response.output_item.done', { output_index: 0, item: reasoning }));
  return out;
}
