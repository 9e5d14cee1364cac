import type { ProviderInfo } from '../registry.ts';
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
 *
 * The prompt-cache plan's key (ctx.promptCache.key, a hash of tenant and
 * session) goes where the provider takes one (registry `promptCacheKey`):
 * OpenAI's `prompt_cache_key` unless the client sent its own, which is kept;
 * xAI's `x-grok-conv-id` header. Other providers get nothing: fields they do
 * not document may be refused. Breakpoints do not apply to this format.
 */
export function chatRequest(
  request: ChatRequest,
  ctx: CallContext,
  provider: Pick<ProviderInfo, 'streamUsage' | 'promptCacheKey'>,
): UpstreamRequest {
  const body: Record<string, unknown> = { ...request, model: ctx.model };
  if (provider.streamUsage === 'always') delete body['stream_options'];
  else if (request.stream === true) body['stream_options'] = { ...request.stream_options, include_usage: true };
  const headers: Record<string, string> = { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' };
  const key = ctx.promptCache?.key;
  if (key !== undefined) {
    if (provider.promptCacheKey === 'prompt_cache_key' && body['prompt_cache_key'] === undefined) body['prompt_cache_key'] = key;
    else if (provider.promptCacheKey === 'x-grok-conv-id') headers['x-grok-conv-id'] = key;
  }
  return { path: joinPath(ctx.baseUrl, '/chat/completions'), headers, body: JSON.stringify(body) };
}
