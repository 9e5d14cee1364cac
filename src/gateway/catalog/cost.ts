import type { TokenUsage } from '../providers/types.ts';
import { MAX_TOKEN_COUNT } from '../providers/usage-counts.ts';
import type { CatalogModel } from './models.ts';

/**
 * USD cost of a call's usage at the catalog's prices. Every input token is
 * priced once, by kind: cache reads at the cached price, cache writes at the
 * write price (input price where the provider bills none separately), the
 * rest at the input price. Reasoning tokens are output tokens and are
 * already within completionTokens (OpenAI bills them as output), so they are
 * not added again. Undefined when the model has no catalog entry.
 *
 * Always finite: the counts a provider reports are clamped before they get
 * here (providers/usage-counts.ts), and a cost that still came out infinite
 * or NaN (counts from elsewhere) is MAX_CALL_USD, never Infinity, which
 * JSON (the usage journal) turns into null and the database refuses.
 */
export function costUsd(usage: TokenUsage, entry: CatalogModel | undefined): number | undefined {
  if (!entry) return undefined;
  const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens);
  const micro =
    uncached * entry.input +
    usage.cachedTokens * entry.cachedInput +
    usage.cacheWriteTokens * (entry.cacheWrite ?? entry.input) +
    usage.completionTokens * entry.output;
  const usd = micro / 1_000_000;
  return Number.isFinite(usd) ? usd : MAX_CALL_USD;
}

/** What one call may cost at most: MAX_TOKEN_COUNT tokens of every kind at a price of 1,000 USD per million, far above any catalog price. */
export const MAX_CALL_USD = (4 * MAX_TOKEN_COUNT * 1000) / 1_000_000;

/** A cost as a header or log value: plain decimal, at most 10 places, no exponent (a saving can be negative: a cache write's premium). */
export function formatUsd(usd: number | undefined): string {
  if (usd === undefined || !Number.isFinite(usd)) return 'unknown';
  const fixed = usd.toFixed(10);
  let end = fixed.length;
  while (fixed.charCodeAt(end - 1) === 48 /* 0 */) end--;
  if (fixed.charCodeAt(end - 1) === 46 /* . */) end--;
  const text = fixed.slice(0, end);
  return text === '-0' ? '0' : text;
}
