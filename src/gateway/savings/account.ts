import type { CatalogModel } from '../catalog/models.ts';
import { promptCacheSavedUsd } from '../prompt-cache/savings.ts';
import type { TokenUsage } from '../providers/types.ts';
import { assumedPrevious, type CacheState, type Modeled, modelAutomatic, modelExplicit } from './cache-model.ts';
import type { PromptProfile } from './prompt-profile.ts';

/**
 * What the gateway saved a call, measured against what this client would
 * have paid sending the same request straight to the provider
 * (docs/gateway-prompt-caching.md and docs/gateway-compaction.md give the
 * formulas). Three requests are modeled against the conversation's previous
 * request (cache-model.ts), at the prices of the model that answered:
 * - D, direct: the client's request (before compaction) with only the
 *   client's own cache breakpoints, after the client's previous request;
 * - G0: the request as sent (compacted) with only the client's breakpoints,
 *   after the previous request as sent;
 * - G1: the request as sent with the gateway's breakpoints too.
 * compaction = D - G0: removed tokens priced where they lay (a cached
 * prefix at the cached price, the rest at the input or write price), net
 * of any cache rewrite the compaction caused; prompt cache = G0 - G1: what
 * the gateway's own breakpoints earned net of their write premium (0 for
 * automatic caching: a prompt_cache_key the gateway adds is not shown to
 * change what a conversation sent one turn at a time reads). The provider's
 * own caching is the rest of what its cache saved, reported apart.
 * Token figures are the gateway's counts scaled to the prompt tokens the
 * provider reported, so another tokenizer does not skew them.
 */
export interface ConversationState {
  client: CacheState;
  sent0: CacheState;
  sent1: CacheState;
}

export interface AccountInput {
  client: PromptProfile;
  sent: PromptProfile;
  /** Anthropic-style caching (explicit breakpoints); otherwise automatic. */
  explicit: boolean;
  /** The answering model's smallest cacheable prefix (explicit caching). */
  minimum: number;
  previous: ConversationState | undefined;
  usage: TokenUsage;
  entry: CatalogModel;
  now: number;
}

export interface Accounted {
  compactionUsd: number;
  promptCacheUsd: number;
  providerCacheUsd: number;
  /** What the client's own request would have used sent directly (routing prices it at both models). */
  direct: TokenUsage;
  next: ConversationState;
}

const clampScale = (s: number) => (Number.isFinite(s) ? Math.min(4, Math.max(0.25, s)) : 1);

export function accountSavings(a: AccountInput): Accounted {
  const { client, sent, entry, usage, now } = a;
  const clientMarks = (p: PromptProfile) => (i: number) => p.client[i] === 1;
  const allMarks = (p: PromptProfile) => (i: number) => p.client[i] === 1 || p.gateway[i] === 1;
  // Nothing known of the previous request, yet the provider read from its cache: assume the client's own caching
  // did as well as it could rather than claim on a guess.
  const guess = a.previous === undefined && usage.cachedTokens > 0;
  const prev = guess
    ? {
        client: assumedPrevious(client, clientMarks(client), now),
        sent0: assumedPrevious(sent, clientMarks(sent), now),
        sent1: assumedPrevious(sent, allMarks(sent), now),
      }
    : a.previous;
  const model = (p: PromptProfile, marked: (i: number) => boolean, before: CacheState | undefined): Modeled =>
    a.explicit ? modelExplicit(p, marked, before, a.minimum, now) : modelAutomatic(p, before, now);
  const direct = model(client, clientMarks(client), prev?.client);
  const sent0 = model(sent, clientMarks(sent), prev?.sent0);
  const sent1 = a.explicit ? model(sent, allMarks(sent), prev?.sent1) : sent0;
  const scale = clampScale(usage.promptTokens / sent.total);
  const price = (m: Modeled) => {
    const uncached = Math.max(0, m.prompt - m.read - m.write);
    return (scale * (uncached * entry.input + m.read * entry.cachedInput + m.write * (entry.cacheWrite ?? entry.input))) / 1e6;
  };
  const compactionUsd = price(direct) - price(sent0);
  const promptCacheUsd = a.explicit ? price(sent0) - price(sent1) : 0;
  const measured = promptCacheSavedUsd(usage, entry);
  return {
    compactionUsd,
    promptCacheUsd,
    providerCacheUsd: measured - promptCacheUsd,
    direct: {
      ...usage,
      promptTokens: Math.round(direct.prompt * scale),
      cachedTokens: Math.round(direct.read * scale),
      cacheWriteTokens: Math.round(direct.write * scale),
    },
    next: { client: direct.state, sent0: sent0.state, sent1: sent1.state },
  };
}
