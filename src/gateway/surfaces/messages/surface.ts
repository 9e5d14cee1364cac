import type { Call, CallTarget } from '../../pipeline/call.ts';
import type { ChatResult, ProviderAdapter } from '../../providers/types.ts';
import type { Surface } from '../surface.ts';
import { MESSAGES_ANSWERS } from './answer-format.ts';
import { messageFromChat } from './from-chat.ts';
import { type ClientMessages, passthroughAdapter } from './passthrough.ts';
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
 */
export function messagesSurface(client: ClientMessages): Surface {
  return {
    name: 'messages',
    request: client.body,
    // Compaction and prompt-cache placement do not know Messages content yet: they leave these calls as sent.
    stages: { compaction: false, promptCache: false, cache: true },
    answers: MESSAGES_ANSWERS,
    adapter(target: CallTarget, call: Call): ProviderAdapter {
      if (target.provider.format === 'anthropic') return passthroughAdapter(target.provider.name, client, target.adapter);
      return translatedAdapter(target, client, call);
    },
  };
}

function translatedAdapter(target: CallTarget, client: ClientMessages, call: Call): ProviderAdapter {
  const base = target.adapter;
  return {
    modelsRequest: (ctx) => base.modelsRequest(ctx),
    chatRequest(_stagesForm, ctx) {
      const decoded = decodeMessages(client.body, {
        reasoning: target.provider.id === 'openai' && REASONING_MODEL.test(ctx.model),
        maxTokensField: target.provider.id === 'openai' ? 'max_completion_tokens' : 'max_tokens',
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
