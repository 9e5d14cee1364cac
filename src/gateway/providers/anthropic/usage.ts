import { isObject, type JsonObject } from '../json.ts';
import type { TokenUsage } from '../types.ts';
import { CountReader } from '../usage-counts.ts';

/**
 * Anthropic usage (Messages API reference, "usage"): input_tokens counts
 * only the uncached input, so the prompt is input + cache reads + cache
 * writes; output_tokens is every output token. Each count, and the
 * prompt's sum, is a whole number from 0 to MAX_TOKEN_COUNT
 * (usage-counts.ts); one that was not is clamped and the usage marked
 * `clamped`. Undefined without a usage object.
 */
export function anthropicUsage(usage: unknown): TokenUsage | undefined {
  if (!isObject(usage)) return undefined;
  const counts = new CountReader();
  const cacheRead = counts.field(usage, 'cache_read_input_tokens');
  const cacheWrite = counts.field(usage, 'cache_creation_input_tokens');
  const read: TokenUsage = {
    promptTokens: counts.bound(counts.field(usage, 'input_tokens') + cacheRead + cacheWrite),
    cachedTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    completionTokens: counts.field(usage, 'output_tokens'),
    reasoningTokens: 0,
  };
  if (counts.clamped) read.clamped = true;
  return read;
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
