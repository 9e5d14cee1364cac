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
 * routing (when it sent the call to another model than the one named) =
 * D at the named model, after the client's previous request there, minus D
 * at the answering model: the price difference, and the cache the named
 * model would have had warm and the answering one may not.
 * Token figures are the gateway's counts scaled to the prompt tokens the
 * provider reported, so another tokenizer does not skew them.
 */
export interface ConversationState {
  client: CacheState;
  sent0: CacheState;
  sent1: CacheState;
}

/** The model the client named, when routing sent the call to another: the direct request goes there. */
export interface Baseline {
  /** The client's request in that model's prompt order. */
  client: PromptProfile;
  explicit: boolean;
  minimum: number;
  previous: CacheState | undefined;
  entry: CatalogModel;
}

export interface AccountInput {
  client: PromptProfile;
  sent: PromptProfile;
  /** Anthropic-style caching (explicit breakpoints); otherwise automatic. */
  explicit: boolean;
  /** The answering model's smallest cacheable prefix (explicit caching). */
  minimum: number;
  previous: Partial<ConversationState> | undefined;
  usage: TokenUsage;
  entry: CatalogModel;
  baseline?: Baseline | undefined;
  now: number;
}

export interface Accounted {
  compactionUsd: number;
  promptCacheUsd: number;
  providerCacheUsd: number;
  /** With a baseline: the direct request at the named model minus the same at the answering model (its cache's warmth included). */
  routingUsd: number;
  next: ConversationState;
  /** With a baseline: the client's state at the named model. */
  nextBaseline: CacheState | undefined;
}

const clampScale = (s: number) => (Number.isFinite(s) ? Math.min(4, Math.max(0.25, s)) : 1);
const clientMarks = (p: PromptProfile) => (i: number) => p.client[i] === 1;
const allMarks = (p: PromptProfile) => (i: number) => p.client[i] === 1 || p.gateway[i] === 1;

/**
 * One request modeled after its previous one. Nothing known of the previous
 * request, yet the provider read from its cache: the client's own caching is
 * assumed to have done as well as it could, rather than claim on a guess.
 */
function model(p: PromptProfile, marked: (i: number) => boolean, previous: CacheState | undefined, c: { explicit: boolean; minimum: number }, guess: boolean, now: number): Modeled {
  const before = previous ?? (guess ? assumedPrevious(p, marked, now) : undefined);
  return c.explicit ? modelExplicit(p, marked, before, c.minimum, now) : modelAutomatic(p, before, now);
}

export function accountSavings(a: AccountInput): Accounted {
  const { client, sent, entry, usage, now } = a;
  const guess = usage.cachedTokens > 0;
  const direct = model(client, clientMarks(client), a.previous?.client, a, guess, now);
  // Nothing compacted, now or in the state it follows: the request as sent is the client's, modeled once.
  const sent0 = sent === client && a.previous?.sent0 === a.previous?.client ? direct : model(sent, clientMarks(sent), a.previous?.sent0, a, guess, now);
  const sent1 = a.explicit ? model(sent, allMarks(sent), a.previous?.sent1, a, guess, now) : sent0;
  const scale = clampScale(usage.promptTokens / sent.total);
  const price = (m: Modeled, at: CatalogModel) => {
    const uncached = Math.max(0, m.prompt - m.read - m.write);
    return (scale * (uncached * at.input + m.read * at.cachedInput + m.write * (at.cacheWrite ?? at.input))) / 1e6;
  };
  const compactionUsd = price(direct, entry) - price(sent0, entry);
  const promptCacheUsd = a.explicit ? price(sent0, entry) - price(sent1, entry) : 0;
  let routingUsd = 0;
  let nextBaseline: CacheState | undefined;
  const b = a.baseline;
  if (b !== undefined) {
    const named = model(b.client, clientMarks(b.client), b.previous, b, guess, now);
    routingUsd = price(named, b.entry) + (usage.completionTokens * (b.entry.output - entry.output)) / 1e6 - price(direct, entry);
    nextBaseline = named.state;
  }
  return {
    compactionUsd,
    promptCacheUsd,
    providerCacheUsd: promptCacheSavedUsd(usage, entry) - promptCacheUsd,
    routingUsd,
    next: { client: direct.state, sent0: sent0.state, sent1: sent1.state },
    nextBaseline,
  };
}
