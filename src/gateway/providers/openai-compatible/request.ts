import type { CallContext, ChatRequest, UpstreamRequest } from '../types.ts';
import { joinPath } from '../upstream-path.ts';

/**
 * The upstream request for an OpenAI-compatible provider: the client's body
 * as it came, unknown fields kept (providers add their own), with `model`
 * set to the provider's id. Streams always ask for usage
 * (`stream_options.include_usage`, OpenAI chat completions reference): the
 * gateway prices every call; providers that send usage unasked and refuse
 * the field (registry `streamUsage: 'always'`) get no stream_options at all.
 * Whether the client asked decides whether the usage chunk is forwarded
 * (StreamOptions.includeUsage, stream.ts).
 */
export function chatRequest(request: ChatRequest, ctx: CallContext, streamUsage: 'always' | undefined): UpstreamRequest {
  const body: Record<string, unknown> = { ...request, model: ctx.model };
  if (streamUsage === 'always') delete body['stream_options'];
  else if (request.stream === true) body['stream_options'] = { ...request.stream_options, include_usage: true };
  return {
    path: joinPath(ctx.baseUrl, '/chat/completions'),
    headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}
