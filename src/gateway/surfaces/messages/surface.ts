import type { Call, CallTarget } from '../../pipeline/call.ts';
import type { ChatResult, ProviderAdapter } from '../../providers/types.ts';
import type { Surface } from '../surface.ts';
import { placeablePlan, withBreakpoints } from './breakpoints.ts';
import { writeBack } from './compacted.ts';
import { MESSAGES_ANSWERS } from './answer-format.ts';
import { messageFromChat } from './from-chat.ts';
import { type ClientMessages, passthroughAdapter } from './passthrough.ts';
import type { StagesForm } from './stages-form.ts';
import { MessagesFromChat } from './stream-from-chat.ts';
import { decodeMessages } from './to-chat.ts';

/** Names the tools a translated call left out (server tools with no equivalent there), comma-separated. */
export const OMITTED_TOOLS_HEADER = 'x-gateway-omitted-tools';

/**
 * OpenAI models that take `reasoning_effort` (the GPT-5 family and the o
 * series): a Messages request's `thinking` becomes it there; elsewhere it is
 * left out, since a provider refuses a parameter its model does not take.
 */
const REASONING_MODEL = /^(?:gpt-5|o[1-9])/;

/**
 * Anthropic's Messages API as a surface. The stages read the request in
 * Chat Completions form (to-chat.ts); what goes upstream depends on the
 * target: to an Anthropic provider the client's own request, untouched
 * (passthrough.ts); to any other, the request translated to Chat Completions
 * for that target (its reasoning field, its output-limit field), and its
 * answer, stream and errors translated back (from-chat.ts,
 * stream-from-chat.ts). Content a translated target cannot carry is refused
 * with a 400 naming it; server tools it has no equivalent for are left out
 * of that call and named in X-Gateway-Omitted-Tools, unless tool_choice
 * forces one (then refused too).
 *
 * `form` is the request as the stages read it (stages-form.ts, the call's
 * body). What compaction changes in it is written back into the client's
 * body (compacted.ts), and that body is what both ways send; the
 * prompt-cache plan's breakpoints go into it only where the client's own
 * leave room (breakpoints.ts), and only on Anthropic targets.
 */
export function messagesSurface(client: ClientMessages, form: StagesForm): Surface {
  // What is sent, and its stages form with each message's place in it: the client's, until compaction changes them.
  let sent = { body: client.body, messages: form.chat.messages, provenance: form.origin };
  return {
    name: 'messages',
    request: client.body,
    stages: { compaction: true, promptCache: true, cache: true },
    answers: MESSAGES_ANSWERS,
    compacted(change) {
      const written = writeBack(client.body, form, change.messages, change.origin);
      sent = { body: written.body, messages: written.messages, provenance: written.provenance };
      return { messages: written.messages, origin: written.origin };
    },
    sent: () => sent.body,
    promptCachePlan: (plan) => placeablePlan(sent.body, sent.messages, sent.provenance, plan),
    adapter(target: CallTarget, call: Call): ProviderAdapter {
      if (target.provider.format === 'anthropic') {
        const plan = call.promptCache;
        const body = plan === undefined ? sent.body : withBreakpoints(sent.body, sent.messages, sent.provenance, plan);
        return passthroughAdapter(target.provider.name, { ...client, body }, target.adapter);
      }
      return translatedAdapter(target, sent.body, call);
    },
  };
}

function translatedAdapter(target: CallTarget, body: ClientMessages['body'], call: Call): ProviderAdapter {
  const base = target.adapter;
  return {
    modelsRequest: (ctx) => base.modelsRequest(ctx),
    chatRequest(_stagesForm, ctx) {
      const decoded = decodeMessages(body, {
        reasoning: target.provider.id === 'openai' && REASONING_MODEL.test(ctx.model),
        maxTokensField: target.provider.id === 'openai' ? 'max_completion_tokens' : 'max_tokens',
        maxOutputTokens: target.entry?.maxOutput,
      });
      if (decoded.uncarried) throw decoded.uncarried;
      if (decoded.omittedTools.length > 0 && !call.replyHeaders.includes(OMITTED_TOOLS_HEADER)) {
        // Tool names are the client's text: percent-encoded, a header value holds visible ASCII only.
        call.replyHeaders.push(OMITTED_TOOLS_HEADER, decoded.omittedTools.map(encodeURIComponent).join(', '));
      }
      return base.chatRequest({ ...decoded.chat, model: ctx.model }, ctx);
    },
    chatResponse(status, body, ctx): ChatResult {
      const result = base.chatResponse(status, body, ctx);
      return { ...result, body: messageFromChat(result.body, { provider: target.provider.name, requestId: ctx.requestId, model: ctx.model }) };
    },
    chatStream: (ctx, options) =>
      new MessagesFromChat(base.chatStream(ctx, { includeUsage: true, cost: options.cost }), {
        requestId: ctx.requestId,
        model: ctx.model,
        provider: target.provider.name,
      }),
    upstreamError: (status, body, headers) => base.upstreamError(status, body, headers),
  };
}
