import type { CatalogModel } from '../catalog/models.ts';
import type { TokenUsage } from '../providers/types.ts';

/**
 * What the provider's prompt cache did on one call, in USD, against the
 * same prompt sent uncached: every token read from the cache cost the
 * cached price instead of the input price, and every token written cost the
 * write price instead (Anthropic's 1.25 x input, a premium, so a first turn
 * saves less than nothing). Per million tokens, at the catalog's prices of
 * the model that answered; 0 when the model has no catalog entry. Not a
 * saving of the gateway's: the savings accounting (savings/account.ts)
 * splits it between the breakpoints the gateway added and the provider's own
 * caching.
 */
export function promptCacheSavedUsd(usage: TokenUsage | undefined, entry: CatalogModel | undefined): number {
  if (usage === undefined || entry === undefined) return 0;
  const readSaving = usage.cachedTokens * (entry.input - entry.cachedInput);
  const writePremium = usage.cacheWriteTokens * ((entry.cacheWrite ?? entry.input) - entry.input);
  return (readSaving - writePremium) / 1_000_000;
}
