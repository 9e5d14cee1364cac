import type { ProviderInfo } from '../registry.ts';
import type { ProviderAdapter } from '../types.ts';
import { joinPath } from '../upstream-path.ts';
import { upstreamError } from './errors.ts';
import { chatRequest } from './request.ts';
import { chatResponse } from './response.ts';
import { OpenAiCompatibleStream } from './stream.ts';

/**
 * The adapter for providers that speak OpenAI's chat completions (OpenAI,
 * Groq, Mistral, DeepSeek, vLLM, ...): a pass-through that reads usage.
 * The provider's name appears in error messages; its streamUsage says
 * whether to ask for stream usage, its promptCacheKey how it takes a
 * prompt-cache key (request.ts).
 */
export function openAiCompatibleAdapter(info: Pick<ProviderInfo, 'name' | 'streamUsage' | 'promptCacheKey'>): ProviderAdapter {
  const provider = info.name;
  return {
    // GET /v1/models: OpenAI's API reference; vLLM, Ollama and llama.cpp's server answer it too.
    modelsRequest: (ctx) => ({ path: joinPath(ctx.baseUrl, '/models'), headers: { authorization: `Bearer ${ctx.apiKey}` } }),
    chatRequest: (request, ctx) => chatRequest(request, ctx, info),
    chatResponse: (status, body) => chatResponse(provider, status, body),
    chatStream: (_ctx, options) => new OpenAiCompatibleStream(provider, options),
    upstreamError: (status, body, headers) => upstreamError(provider, status, body, headers),
  };
}
