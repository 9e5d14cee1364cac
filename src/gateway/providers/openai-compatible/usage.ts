import { isObject } from '../json.ts';
import type { TokenUsage } from '../types.ts';
import { CountReader } from '../usage-counts.ts';

/**
 * Token counts from an OpenAI `usage` object (chat completions reference):
 * prompt_tokens include the cached ones (prompt_tokens_details.cached_tokens),
 * completion_tokens include reasoning (completion_tokens_details.reasoning_tokens).
 * DeepSeek reports cache hits as prompt_cache_hit_tokens instead.
 * Each count is a whole number from 0 to MAX_TOKEN_COUNT (usage-counts.ts);
 * one that was not is clamped and the usage marked `clamped`.
 * Undefined when there is no usage object.
 */
export function openAiUsage(usage: unknown): TokenUsage | undefined {
  if (!isObject(usage)) return undefined;
  const counts = new CountReader();
  const cached = counts.field(usage['prompt_tokens_details'], 'cached_tokens') || counts.field(usage, 'prompt_cache_hit_tokens');
  const read: TokenUsage = {
    promptTokens: counts.field(usage, 'prompt_tokens'),
    cachedTokens: cached,
    cacheWriteTokens: 0,
    completionTokens: counts.field(usage, 'completion_tokens'),
    reasoningTokens: counts.field(usage['completion_tokens_details'], 'reasoning_tokens'),
  };
  if (counts.clamped) read.clamped = true;
  return read;
}
