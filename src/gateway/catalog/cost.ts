import type { TokenUsage } from '../providers/types.ts';
import type { CatalogModel } from './models.ts';

/**
 * USD cost of a call's usage at the catalog's prices. Every input token is
 * priced once, by kind: cache reads at the cached price, cache writes at the
 * write price (input price where the provider bills none separately), the
 * rest at the input price. Reasoning tokens are output tokens and are
 * already within completionTokens (OpenAI bills them as output), so they are
 * not added again. Undefined when the model has no catalog entry.
 */
export function costUsd(usage: TokenUsage, entry: CatalogModel | undefined): number | undefined {
  if (!entry) return undefined;
  const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens);
  const micro =
    uncached * entry.input +
    usage.cachedTokens * entry.cachedInput +
    usage.cacheWriteTokens * (entry.cacheWrite ?? entry.input) +
    usage.completionTokens * entry.output;
  return micro / 1_000_000;
}

/** A cost as a header or log value: plain decimal, at most 10 places, no exponent (a saving can be negative: a cache write's premium). */
export function formatUsd(usd: number | undefined): string {
  if (usd === undefined) return 'unknown';
  const fixed = usd.toFixed(10);
  let end = fixed.length;
  while (fixed.charCodeAt(end - 1) === 48 /* 0 */) end--;
  if (fixed.charCodeAt(end - 1) === 46 /* . */) end--;
  const text = fixed.slice(0, end);
  return text === '-0' ? '0' : text;
}
