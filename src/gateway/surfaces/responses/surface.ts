import type { Call, CallTarget } from '../../pipeline/call.ts';
import { isObject, type JsonObject, parseObject } from '../../providers/json.ts';
import type { ChatResult, ChatStream, ProviderAdapter } from '../../providers/types.ts';
import type { Surface } from '../surface.ts';
import { RESPONSES_ANSWERS } from './answer-format.ts';
import { writeBack } from './compacted.ts';
import type { ResponseContext } from './from-chat.ts';
import { responseFromChat } from './from-chat.ts';
import { type ResponseEcho, responsesPassthrough } from './passthrough.ts';
import { ResponsesFromChat } from './stream-from-chat.ts';
import { decodeResponses } from './to-chat.ts';

/** Names the built-in tools a translated call left out (no equivalent at that provider), comma-separated. */
export const OMITTED_TOOLS_HEADER = 'x-gateway-omitted-tools';
/** How many reasoning items a translated call left out (the provider cannot take another's reasoning). */
export const REASONING_DROPPED_HEADER = 'x-gateway-reasoning-dropped';

/** OpenAI models that take `reasoning_effort` through Chat Completions (the GPT-5 family and the o series). */
const REASONING_MODEL = /^(?:gpt-5|o[1-9])/;

/** Anthropic's web search server tool: what OpenAI's web_search becomes there (Anthropic's tool reference, "Web search tool"). */
const ANTHROPIC_WEB_SEARCH = { type: 'web_search_20250305', name: 'web_search' };

/** What the route decided for one Responses call (routes.ts). */
export interface ResponsesCall {
  /** The client's request as it came (what stored bodies keep, what response objects echo). */
  client: JsonObject;
  /**
   * What goes upstream: the client's request itself when it keeps no state
   * and names no previous response (Codex's `store: false`), else its
   * stateless expansion (the chain's items, then this turn's; `store:
   * false`; encrypted reasoning included). What the stages, the cache key
   * and every translation read.
   */
  sent: JsonObject;
  /** The stages' form of `sent` (its messages) and, for each message, the items it was made from (to-chat.ts). */
  form: { messages: readonly unknown[]; groups: readonly (readonly number[])[] };
  echo: ResponseEcho;
  /** The gateway's id for a response it synthesizes (translated answers; OpenAI's answers keep OpenAI's). */
  responseId: string;
  createdAt: number;
  /** The first response of the chain `previous_response_id` continues (the session's prompt-cache key). */
  chainFirstId: string | undefined;
  /** Called with the complete response once known, at most once: the route stores it (the promise settles when it is). */
  onResponse: (response: JsonObject) => Promise<void> | undefined;
}

/**
 * OpenAI's Responses API as a surface. The stages read the request in Chat
 * Completions form (to-chat.ts, over `sent`); what goes upstream depends on
 * the target: to OpenAI the Responses request, stateless (passthrough.ts);
 * to any other provider the request translated to Chat Completions for
 * that target (its reasoning and output-limit fields, its web search) and
 * its answer and stream back as a response and Responses events
 * (from-chat.ts, stream-from-chat.ts). Content a translated target cannot
 * carry is refused with a 400 naming it; built-in tools it has no
 * equivalent for are left out and named in X-Gateway-Omitted-Tools, unless
 * tool_choice forces one (refused too); reasoning items another provider
 * made are dropped there, said in X-Gateway-Reasoning-Dropped and in the
 * usage record's flags.
 *
 * What compaction changes in the stages' form is written back into the
 * items (compacted.ts): both ways then send the compacted request, and what
 * cannot be carried is undone, so what is counted is what is sent.
 */
export function responsesSurface(rc: ResponsesCall): Surface {
  let response: JsonObject | undefined;
  let stored: Promise<void> | undefined;
  let reasoningDropped = false;
  // What is sent: the route's request, until compaction changes it.
  let sent = rc.sent;
  const answered = (r: JsonObject) => {
    if (response !== undefined) return;
    response = r;
    stored = rc.onResponse(r);
  };
  return {
    name: 'responses',
    request: rc.client,
    stages: { compaction: true, promptCache: true, cache: true },
    answers: RESPONSES_ANSWERS,
    sent: () => sent,
    compacted(change) {
      const written = writeBack(sent, rc.form.groups, rc.form.messages, change.messages, change.origin);
      sent = written.body;
      return { messages: written.messages, origin: written.origin };
    },
    // The chain's first response names the conversation: every later turn sends the same prompt_cache_key, wherever it goes.
    promptCacheSession: rc.chainFirstId === undefined ? undefined : `response:${rc.chainFirstId}`,
    flags: () => (reasoningDropped ? 'reasoning_dropped' : undefined),
    finish(call: Call) {
      if (response === undefined && call.status === 200) {
        // A reused answer (a cache hit, a dedup follower): its response, from the complete answer or the stream's last event.
        const reused = call.result !== undefined ? parseObject(call.result) : reusedFromStream(call.usageChunkSent);
        if (reused !== undefined) answered(reused);
      }
      // A complete answer goes out once its response is stored (every replica can continue it then).
      return stored;
    },
    adapter(target: CallTarget, call: Call): ProviderAdapter {
      if (target.provider.id === 'openai') return responsesPassthrough(target.provider.name, sent, rc.echo, target.adapter, answered);
      const ctx: ResponseContext = { id: rc.responseId, createdAt: rc.createdAt, model: String(rc.client['model']), request: rc.client, provider: target.provider.name };
      return translatedAdapter(target, sent, call, ctx, answered, () => {
        reasoningDropped = true;
      });
    },
  };
}

/**
 * Hands the stream's response to `answered` as soon as it is complete: before
 * the text carrying response.completed is written, so that a client that
 * sends its next turn on that event finds this one stored.
 */
function completing(stream: ResponsesFromChat, answered: (response: JsonObject) => void): ChatStream {
  const check = (text: string): string => {
    const response = stream.response;
    if (response !== undefined) answered(response);
    return text;
  };
  return {
    push: (chunk) => check(stream.push(chunk)),
    end: () => check(stream.end()),
    fail: (error) => stream.fail(error),
    get usage() {
      return stream.usage;
    },
    get model() {
      return stream.model;
    },
    get error() {
      return stream.error;
    },
    settleUnfinished: (promptTokens) => stream.settleUnfinished(promptTokens),
  };
}

function reusedFromStream(usageChunk: string | undefined): JsonObject | undefined {
  const response = usageChunk === undefined ? undefined : parseObject(usageChunk)?.['response'];
  return isObject(response) ? response : undefined;
}

function translatedAdapter(
  target: CallTarget,
  body: JsonObject,
  call: Call,
  ctx: ResponseContext,
  answered: (response: JsonObject) => void,
  droppedReasoning: () => void,
): ProviderAdapter {
  const base = target.adapter;
  const anthropic = target.provider.format === 'anthropic';
  let webSearch = false;
  return {
    modelsRequest: (c) => base.modelsRequest(c),
    chatRequest(_stagesForm, c) {
      const decoded = decodeResponses(body, {
        reasoning: target.provider.id === 'openai' && REASONING_MODEL.test(c.model),
        maxTokensField: target.provider.id === 'openai' ? 'max_completion_tokens' : 'max_tokens',
        maxOutputTokens: target.entry?.maxOutput,
        anthropic,
      });
      if (decoded.uncarried) throw decoded.uncarried;
      if (decoded.omittedTools.length > 0 && !call.replyHeaders.includes(OMITTED_TOOLS_HEADER)) {
        call.replyHeaders.push(OMITTED_TOOLS_HEADER, decoded.omittedTools.map(encodeURIComponent).join(', '));
      }
      if (decoded.droppedReasoning > 0) {
        droppedReasoning();
        if (!call.replyHeaders.includes(REASONING_DROPPED_HEADER)) call.replyHeaders.push(REASONING_DROPPED_HEADER, String(decoded.droppedReasoning));
      }
      webSearch = decoded.webSearch;
      if (decoded.toolNames) ctx = { ...ctx, toolNames: decoded.toolNames };
      const request = base.chatRequest({ ...decoded.chat, model: c.model }, c);
      if (!webSearch) return request;
      // Anthropic's own web search, added to the translated request (Chat Completions has no way to say it).
      const sent = JSON.parse(request.body) as JsonObject;
      sent['tools'] = [...(Array.isArray(sent['tools']) ? sent['tools'] : []), ANTHROPIC_WEB_SEARCH];
      return { ...request, body: JSON.stringify(sent) };
    },
    chatResponse(status, answer, c): ChatResult {
      const result = base.chatResponse(status, answer, c);
      const chat = parseObject(result.body) ?? {};
      const response = responseFromChat(chat, { ...ctx, model: result.model ?? ctx.model });
      answered(response);
      return { ...result, body: JSON.stringify(response) };
    },
    chatStream(c, options) {
      return completing(new ResponsesFromChat(base.chatStream(c, { includeUsage: true, cost: options.cost }), ctx), answered);
    },
    upstreamError: (status, answer, headers) => base.upstreamError(status, answer, headers),
  };
}
