import { isObject } from '../../providers/json.ts';
import type { TokenUsage } from '../../providers/types.ts';
import { CountReader } from '../../providers/usage-counts.ts';

/**
 * Token counts from a Responses `usage` object (API reference, "The
 * response object"): input_tokens include the cached ones
 * (input_tokens_details.cached_tokens), output_tokens include reasoning
 * (output_tokens_details.reasoning_tokens). Counts out of range are clamped
 * as every provider's are (usage-counts.ts). Undefined when there is none.
 */
export function responsesUsage(usage: unknown): TokenUsage | undefined {
  if (!isObject(usage)) return undefined;
  const counts = new CountReader();
  const read: TokenUsage = {
    promptTokens: counts.field(usage, 'input_tokens'),
    cachedTokens: counts.field(usage['input_tokens_details'], 'cached_tokens'),
    cacheWriteTokens: 0,
    completionTokens: counts.field(usage, 'output_tokens'),
    reasoningTokens: counts.field(usage['output_tokens_details'], 'reasoning_tokens'),
  };
  if (counts.clamped) read.clamped = true;
  return read;
}
