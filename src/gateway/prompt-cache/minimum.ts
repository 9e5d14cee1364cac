/**
 * The smallest prompt Anthropic caches, by model (Anthropic docs, "Prompt
 * caching", minimum cacheable prompt length): a breakpoint on a shorter
 * prefix is ignored by the provider, so the gateway places none there.
 * Claude Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7: 1024 tokens;
 * Haiku 3 and 3.5, Sonnet 4.6: 2048; Haiku 4.5, Opus 4.5 and later: 4096.
 * Checked in order, the first match wins; unknown models take 1024 (the
 * provider ignoring a breakpoint costs nothing).
 */
const MINIMUMS: readonly [RegExp, number][] = [
  [/haiku-4|haiku-[5-9]|opus-4-[5-9]|opus-[5-9]/, 4096],
  [/haiku|sonnet-4-[6-9]/, 2048],
];
const DEFAULT_MINIMUM = 1024;

/** Anthropic's minimum cacheable prompt for `model` (the provider's id; OpenRouter-style `anthropic/...` works too), in tokens. */
export function anthropicMinimum(model: string): number {
  const id = model.replace(/\./g, '-');
  for (const [pattern, tokens] of MINIMUMS) if (pattern.test(id)) return tokens;
  return DEFAULT_MINIMUM;
}
