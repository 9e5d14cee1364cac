import type { IncomingHttpHeaders } from 'node:http';
import { scriptedTurn, type ThinkingSigner, thinkingAsked } from './anthropic-agent.ts';
import { type Content, contentFor, type OfferedTool, type Reply, splitArguments, splitText, textOf } from './answer.ts';
import type { Behaviour } from './behaviour.ts';
import { errorAnswer, streamErrorEvent } from './faults.ts';
import type { BilledTokens } from './ledger.ts';
import type { CacheFigures } from './prompt-cache.ts';
import { checkCacheControl } from './prompt-cache-anthropic.ts';
import { SSE_HEADERS, type StreamPlan, sseEvent } from './sse.ts';

/**
 * Anthropic Messages (API reference: "Messages", "Streaming Messages",
 * "Count tokens", "Errors", "Versions"). Checked as Anthropic checks them: a
 * key (401; `x-api-key`, or `Authorization: Bearer`, which
 * @anthropic-ai/sdk 1.x sends for an API key), `anthropic-version` (400),
 * then `model`, `max_tokens` (not for count_tokens) and `messages` (400),
 * and message roles only user or assistant (the system prompt goes in the
 * top-level `system`), or system too when the `anthropic-beta` header has a
 * `per-turn-control-*` flag: Claude Code 2.1 sends role-system messages with
 * that flag and, on a 400, retries without either. Unknown fields and a
 * query (`?beta=true`) are ignored.
 *
 * Tool use: when the request offers `tools` and either `tool_choice` is
 * `{type: "any"}` or `{type: "tool", name}`, or the last user text contains
 * "call tool", the answer is one tool_use block for the named (else the
 * first) tool. `{type: "none"}` never calls. A scripted agent turn
 * (behaviour `agent`) and signed thinking (behaviour `thinking`): see
 * anthropic-agent.ts.
 */

type Body = Record<string, unknown>;
type Message = { role?: unknown; content?: unknown };

export interface AnthropicContext {
  behaviour: Behaviour;
  requestId: string;
  id: (prefix: string) => string;
  /** When set, the only accepted key. */
  apiKey: string | undefined;
  /** Signs the thinking blocks of answers and checks the ones sent back (behaviour `thinking`). */
  signer: ThinkingSigner;
  /** Set when behaviour.promptCache is on: the prompt-cache simulation (prompt-cache-anthropic.ts) for a valid request. */
  simulate?: ((body: Body, apiKey: string) => CacheFigures) | undefined;
  /** Told the usage of every answer (the fake's ledger). */
  bill?: ((model: string, usage: Omit<BilledTokens, 'calls'>) => void) | undefined;
}

/** A thinking block of the answer: the text shown (empty with `display: "omitted"`) and its signature. */
interface Thinking {
  text: string;
  signature: string;
}

const fail = (ctx: AnthropicContext, kind: 'invalid_request' | 'authentication', message?: string): Reply => ({
  kind: 'answer',
  answer: errorAnswer('anthropic', kind, ctx.requestId, message),
});

/** The flags of the `anthropic-beta` header (comma-separated, possibly repeated). */
function betaFlags(headers: IncomingHttpHeaders): string[] {
  const value = headers['anthropic-beta'];
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  return joined.split(',').map((f) => f.trim());
}

/** The request checked as Anthropic checks it (the 401 or 400 it would answer), else what the answer needs from it. */
function checkRequest(body: Body, headers: IncomingHttpHeaders, ctx: AnthropicContext, route: 'messages' | 'count_tokens'): Reply | { key: string; lastText: string; chars: number } {
  const auth = headers.authorization;
  const key = headers['x-api-key'] ?? (auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
  if (typeof key !== 'string' || key === '') return fail(ctx, 'authentication', 'x-api-key header is required');
  if (ctx.apiKey !== undefined && key !== ctx.apiKey) return fail(ctx, 'authentication', 'invalid x-api-key');
  if (typeof headers['anthropic-version'] !== 'string') return fail(ctx, 'invalid_request', 'anthropic-version: header is required');
  for (const field of route === 'messages' ? (['model', 'max_tokens', 'messages'] as const) : (['model', 'messages'] as const)) {
    if (body[field] === undefined) return fail(ctx, 'invalid_request', `${field}: Field required`);
  }
  if (route === 'messages' && (!Number.isInteger(body['max_tokens']) || (body['max_tokens'] as number) < 1)) {
    return fail(ctx, 'invalid_request', 'max_tokens: Input should be a valid integer greater than or equal to 1');
  }
  const messages = body['messages'];
  if (!Array.isArray(messages)) return fail(ctx, 'invalid_request', 'messages: Input should be a valid list');
  const systemRole = betaFlags(headers).some((f) => f.startsWith('per-turn-control-'));
  let chars = textOf(body['system']).length;
  let lastText = '';
  for (const [i, m] of (messages as Message[]).entries()) {
    if (m?.role !== 'user' && m?.role !== 'assistant' && !(systemRole && m?.role === 'system')) {
      return fail(ctx, 'invalid_request', `messages.${i}.role: Input should be 'user' or 'assistant'`);
    }
    const text = textOf(m.content);
    chars += text.length;
    if (m.role === 'user') lastText = text;
  }
  const cacheProblem = checkCacheControl(body);
  if (cacheProblem !== undefined) return fail(ctx, 'invalid_request', cacheProblem);
  if (ctx.behaviour.thinking !== undefined) {
    const thinkingProblem = ctx.signer.check(messages);
    if (thinkingProblem !== undefined) return fail(ctx, 'invalid_request', thinkingProblem);
  }
  return { key, lastText, chars };
}

/** POST /v1/messages/count_tokens: `{input_tokens}`, the behaviour's promptTokens or about a quarter of the request's text length. */
export function countTokens(body: Body, headers: IncomingHttpHeaders, ctx: AnthropicContext): Reply {
  const checked = checkRequest(body, headers, ctx, 'count_tokens');
  if ('kind' in checked) return checked;
  const inputTokens = ctx.behaviour.promptTokens ?? Math.max(1, Math.ceil(checked.chars / 4));
  return {
    kind: 'answer',
    answer: { status: 200, headers: { 'content-type': 'application/json', 'request-id': ctx.requestId }, body: JSON.stringify({ input_tokens: inputTokens }) },
  };
}

export function createMessage(body: Body, headers: IncomingHttpHeaders, ctx: AnthropicContext): Reply {
  const checked = checkRequest(body, headers, ctx, 'messages');
  if ('kind' in checked) return checked;
  const { key, lastText, chars } = checked;
  const b = simulated(ctx, body, key);
  const content = answerContent(b, body, lastText, chars, ctx.id('toolu_01'));
  const thinking = signedThinking(b, body, ctx.signer, content);
  const meta = { id: ctx.id('msg_01'), model: body['model'] };
  ctx.bill?.(String(body['model']), {
    promptTokens: content.promptTokens + b.cachedTokens + b.cacheCreationTokens,
    cachedTokens: b.cachedTokens,
    cacheWriteTokens: b.cacheCreationTokens,
    completionTokens: content.completionTokens,
    reasoningTokens: 0,
  });
  if (body['stream'] === true) {
    return { kind: 'stream', headers: { ...SSE_HEADERS, 'request-id': ctx.requestId }, plan: streamPlan(content, thinking, meta, b) };
  }
  const main = content.tool ? toolUse(content.tool, JSON.parse(content.tool.arguments)) : { type: 'text', text: content.text };
  const message = {
    ...meta,
    type: 'message',
    role: 'assistant',
    content: thinking ? [{ type: 'thinking', thinking: thinking.text, signature: thinking.signature }, main] : [main],
    stop_reason: content.tool ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { ...inputUsage(content, b), output_tokens: content.completionTokens, service_tier: 'standard', ...b.usageFields },
  };
  return { kind: 'answer', answer: { status: 200, headers: { 'content-type': 'application/json', 'request-id': ctx.requestId }, body: JSON.stringify(message) } };
}

/** The scripted agent's move when there is one, else the echo or the tool call of answer.ts. */
function answerContent(b: Behaviour, body: Body, lastText: string, chars: number, toolId: string): Content {
  const turn = b.agent ? scriptedTurn(b.agent, body) : undefined;
  if (turn === undefined) return contentFor(b, lastText, chars, toolToUse(body, lastText), toolId);
  if ('text' in turn) return contentFor({ ...b, text: turn.text }, lastText, chars, undefined, toolId);
  const base = contentFor(b, lastText, chars, undefined, toolId);
  return { ...base, text: '', tool: { id: toolId, name: turn.call.tool, arguments: JSON.stringify(turn.call.input) }, completionTokens: b.completionTokens ?? 10 };
}

/** The answer's thinking block, when the behaviour has one and the request turns thinking on; a tool call after it is remembered with its signature. */
function signedThinking(b: Behaviour, body: Body, signer: ThinkingSigner, content: Content): Thinking | undefined {
  const asked = b.thinking === undefined ? undefined : thinkingAsked(body);
  if (asked === undefined || b.thinking === undefined) return undefined;
  const text = asked.shown ? b.thinking : '';
  const signature = signer.sign(text);
  if (content.tool) signer.followed(content.tool.id, signature);
  return { text, signature };
}

/** The behaviour with the simulation's token counts, when it is on: input_tokens excludes cache reads and writes. */
function simulated(ctx: AnthropicContext, body: Body, apiKey: string): Behaviour {
  if (!ctx.simulate) return ctx.behaviour;
  const f = ctx.simulate(body, apiKey);
  return { ...ctx.behaviour, promptTokens: f.promptTokens - f.cacheReadTokens - f.cacheWriteTokens, cachedTokens: f.cacheReadTokens, cacheCreationTokens: f.cacheWriteTokens };
}

function toolToUse(body: Body, lastText: string): OfferedTool | undefined {
  const tools = body['tools'];
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const choice = body['tool_choice'] as { type?: unknown; name?: unknown } | undefined;
  const forced = choice?.type === 'any' || choice?.type === 'tool';
  if (choice?.type === 'none' || !(forced || lastText.includes('call tool'))) return undefined;
  const offered = (tools as { name?: unknown; input_schema?: unknown }[]).filter((t) => typeof t?.name === 'string');
  const tool = offered.find((t) => choice?.type === 'tool' && t.name === choice.name) ?? offered[0];
  return tool ? { name: tool.name as string, schema: tool.input_schema } : undefined;
}

const toolUse = (tool: NonNullable<Content['tool']>, input: unknown) => ({ type: 'tool_use', id: tool.id, name: tool.name, input });

/** Input-side usage: input_tokens excludes cache reads and writes, which are reported beside it. */
function inputUsage(content: Content, b: Behaviour) {
  return {
    input_tokens: content.promptTokens,
    cache_creation_input_tokens: b.cacheCreationTokens,
    cache_read_input_tokens: b.cachedTokens,
    cache_creation: { ephemeral_5m_input_tokens: b.cacheCreationTokens, ephemeral_1h_input_tokens: 0 },
  };
}

/** The events of a thinking block at index 0: start, one thinking_delta per word (none when the text is omitted), the signature_delta, stop. */
function thinkingEvents(thinking: Thinking): string[] {
  const delta = (d: unknown) => sseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: d });
  return [
    sseEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
    sseEvent('ping', { type: 'ping' }),
    ...(thinking.text === '' ? [] : splitText(thinking.text, undefined).map((part) => delta({ type: 'thinking_delta', thinking: part }))),
    delta({ type: 'signature_delta', signature: thinking.signature }),
    sseEvent('content_block_stop', { type: 'content_block_stop', index: 0 }),
  ];
}

/**
 * message_start (content empty, output_tokens 1), then the thinking block
 * when there is one (thinking_delta, signature_delta), content_block_start
 * of the answer's block, a ping after the first block's start,
 * content_block_delta events (text_delta, or input_json_delta for
 * tool_use), content_block_stop, message_delta (stop_reason and the
 * cumulative usage, output_tokens final), message_stop. The faults count
 * the answer's deltas only.
 */
function streamPlan(content: Content, thinking: Thinking | undefined, meta: { id: string; model: unknown }, b: Behaviour): StreamPlan {
  const { tool } = content;
  const index = thinking ? 1 : 0;
  const start = {
    type: 'message_start',
    message: {
      ...meta,
      type: 'message',
      role: 'assistant',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...inputUsage(content, b), output_tokens: 1, service_tier: 'standard', ...b.usageFields },
    },
  };
  const block = tool ? toolUse(tool, {}) : { type: 'text', text: '' };
  const blockStart = sseEvent('content_block_start', { type: 'content_block_start', index, content_block: block });
  const head = thinking
    ? [sseEvent('message_start', start), ...thinkingEvents(thinking), blockStart]
    : [sseEvent('message_start', start), blockStart, sseEvent('ping', { type: 'ping' })];
  const delta = (d: unknown) => sseEvent('content_block_delta', { type: 'content_block_delta', index, delta: d });
  const deltas = tool
    ? splitArguments(tool.arguments, b.chunks).map((part) => delta({ type: 'input_json_delta', partial_json: part }))
    : splitText(content.text, b.chunks).map((part) => delta({ type: 'text_delta', text: part }));
  const { cache_creation: _, ...cumulative } = inputUsage(content, b);
  const tail = [
    sseEvent('content_block_stop', { type: 'content_block_stop', index }),
    sseEvent('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: tool ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { ...cumulative, output_tokens: content.completionTokens, ...b.usageFields },
    }),
    sseEvent('message_stop', { type: 'message_stop' }),
  ];
  return {
    head,
    deltas,
    tail,
    error: streamErrorEvent('anthropic'),
    garbage: `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{\n\n`,
    delta: (text) => delta({ type: 'text_delta', text }),
  };
}

/** GET /v1/models as Anthropic lists models (asked with an anthropic-version header). */
export function modelList(models: readonly string[]): string {
  const data = models.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' }));
  return JSON.stringify({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}
