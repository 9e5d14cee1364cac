import type { ProviderAdapter } from '../types.ts';
import { upstreamError } from './errors.ts';
import { joinPath } from '../upstream-path.ts';
import { ANTHROPIC_VERSION, type AnthropicRequestOptions, chatRequest } from './request.ts';
import { chatResponse } from './response.ts';
import { AnthropicStream } from './stream.ts';

/**
 * The adapter for Anthropic's Messages API: OpenAI chat completions
 * translated both ways (request.ts, response.ts, stream.ts, errors.ts).
 * `provider` is the display name used in error messages.
 */
export function anthropicAdapter(provider: string, options: AnthropicRequestOptions): ProviderAdapter {
  return {
    // GET /v1/models (Anthropic API reference, "List Models"): the same key and version headers as Messages.
    modelsRequest: (ctx) => ({ path: joinPath(ctx.baseUrl, '/models'), headers: { 'x-api-key': ctx.apiKey, 'anthropic-version': ANTHROPIC_VERSION } }),
    chatRequest: (request, ctx) => chatRequest(request, ctx, options),
    chatResponse: (_status, body, ctx) => chatResponse(provider, body, ctx),
    chatStream: (ctx, streamOptions) => new AnthropicStream(provider, ctx, streamOptions),
    upstreamError: (status, body, headers) => upstreamError(provider, status, body, headers),
  };
}
