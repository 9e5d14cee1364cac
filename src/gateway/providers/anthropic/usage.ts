import { countField, isObject, type JsonObject } from '../json.ts';
import type { TokenUsage } from '../types.ts';

/**
 * Anthropic usage (Messages API reference, "usage"): input_tokens counts
 * only the uncached input, so the prompt is input + cache reads + cache
 * writes; output_tokens is every output token. Undefined without a usage object.
 */
export function anthropicUsage(usage: unknown): TokenUsage | undefined {
  if (!isObject(usage)) return undefined;
  const cacheRead = countField(usage, 'cache_read_input_tokens');
  const cacheWrite = countField(usage, 'cache_creation_input_tokens');
  return {
    promptTokens: countField(usage, 'input_tokens') + cacheRead + cacheWrite,
    cachedTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    completionTokens: countField(usage, 'output_tokens'),
    reasoningTokens: 0,
  };
}

/** A TokenUsage as the `usage` of an OpenAI chat.completion (and of the last chunk of a stream). */
export function openAiUsageObject(usage: TokenUsage): JsonObject {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens },
  };
}
