import { countField, isObject } from '../json.ts';
import type { TokenUsage } from '../types.ts';

/**
 * Token counts from an OpenAI `usage` object (chat completions reference):
 * prompt_tokens include the cached ones (prompt_tokens_details.cached_tokens),
 * completion_tokens include reasoning (completion_tokens_details.reasoning_tokens).
 * DeepSeek reports cache hits as prompt_cache_hit_tokens instead.
 * Undefined when there is no usage object.
 */
export function openAiUsage(usage: unknown): TokenUsage | undefined {
  if (!isObject(usage)) return undefined;
  const cached = countField(usage['prompt_tokens_details'], 'cached_tokens') || countField(usage, 'prompt_cache_hit_tokens');
  return {
    promptTokens: countField(usage, 'prompt_tokens'),
    cachedTokens: cached,
    cacheWriteTokens: 0,
    completionTokens: countField(usage, 'completion_tokens'),
    reasoningTokens: countField(usage['completion_tokens_details'], 'reasoning_tokens'),
  };
}
