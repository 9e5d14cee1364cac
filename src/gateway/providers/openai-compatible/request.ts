import type { CallContext, ChatRequest, UpstreamRequest } from '../types.ts';
import { joinPath } from '../upstream-path.ts';

/**
 * The upstream request for an OpenAI-compatible provider: the client's body
 * as it came, unknown fields kept (providers add their own), with `model`
 * set to the provider's id. Streams always ask for usage
 * (`stream_options.include_usage`, OpenAI chat completions reference): the
 * gateway prices every call. Whether the client asked is read with
 * clientWantsUsage before this, and decides whether the usage chunk is
 * forwarded (see stream.ts).
 */
export function chatRequest(request: ChatRequest, ctx: CallContext): UpstreamRequest {
  const body: Record<string, unknown> = { ...request, model: ctx.model };
  if (request.stream === true) body['stream_options'] = { ...request.stream_options, include_usage: true };
  return {
    path: joinPath(ctx.baseUrl, '/chat/completions'),
    headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

/** Whether the client itself asked for the usage chunk of a stream. */
export function clientWantsUsage(request: ChatRequest): boolean {
  return request.stream_options?.include_usage === true;
}
