import type { ProviderAdapter } from '../types.ts';
import { upstreamError } from './errors.ts';
import { chatRequest } from './request.ts';
import { chatResponse } from './response.ts';
import { OpenAiCompatibleStream } from './stream.ts';

/**
 * The adapter for providers that speak OpenAI's chat completions (OpenAI,
 * Groq, Mistral, DeepSeek, vLLM, ...): a pass-through that reads usage.
 * `provider` is the display name used in error messages.
 */
export function openAiCompatibleAdapter(provider: string): ProviderAdapter {
  return {
    chatRequest,
    chatResponse: (status, body) => chatResponse(provider, status, body),
    chatStream: (_ctx, options) => new OpenAiCompatibleStream(provider, options),
    upstreamError: (status, body, headers) => upstreamError(provider, status, body, headers),
  };
}
