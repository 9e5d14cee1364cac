/**
 * The model catalog: data, versioned with the code. Prices are USD per
 * million tokens as each provider's public pricing page listed them on
 * `pricesRead` (standard tier, no batch discount); `cachedInput` is the
 * price of a prompt-cache read, `cacheWrite` of a prompt-cache write
 * (Anthropic's 5-minute cache: 1.25 x input). A model a provider serves but
 * the catalog lacks can still be called as `provider/model`; its cost is then
 * unknown (X-Gateway-Cost: unknown), never guessed.
 */
export interface CatalogModel {
  provider: string;
  id: string;
  contextWindow: number;
  input: number;
  cachedInput: number;
  /** Unset: the provider does not bill cache writes separately (they are ordinary input). */
  cacheWrite?: number;
  output: number;
  pricesRead: string;
  /**
   * Capability tier, for routing (docs/gateway-routing.md): 1 light (short
   * answers, rewriting, extraction), 2 standard (code, multi-step tasks,
   * tools), 3 frontier (proofs, hard reasoning, long agent work). A judgement
   * from public benchmarks and the providers' own positioning, not a price.
   */
  tier: Tier;
  /** Accepts image parts (routing sends a prompt with images only to these). */
  vision: boolean;
  /**
   * The most output tokens one answer may have, where the provider documents
   * it: a request translated from another API (Claude Code asks for 128,000)
   * has its limit lowered to it rather than refused. Unset: unknown, the
   * client's limit is sent as it is.
   */
  maxOutput?: number;
}

export type Tier = 1 | 2 | 3;
export const TIERS: readonly Tier[] = [1, 2, 3];

export const CATALOG_VERSION = '2026-12-02';

const m = (
  provider: string,
  id: string,
  contextWindow: number,
  prices: { input: number; cachedInput: number; cacheWrite?: number; output: number },
  pricesRead: string,
  routing: { tier: Tier; vision: boolean },
  maxOutput?: number,
): CatalogModel => ({ provider, id, contextWindow, ...prices, pricesRead, ...routing, ...(maxOutput === undefined ? {} : { maxOutput }) });

const light = { tier: 1, vision: true } as const;
const lightText = { tier: 1, vision: false } as const;
const standard = { tier: 2, vision: true } as const;
const standardText = { tier: 2, vision: false } as const;
const frontier = { tier: 3, vision: true } as const;
const frontierText = { tier: 3, vision: false } as const;

export const MODELS: readonly CatalogModel[] = [
  m('openai', 'gpt-5', 400_000, { input: 1.25, cachedInput: 0.125, output: 10 }, '2026-06-21', frontier, 128_000),
  m('openai', 'gpt-5-mini', 400_000, { input: 0.25, cachedInput: 0.025, output: 2 }, '2026-06-21', standard, 128_000),
  m('openai', 'gpt-5-nano', 400_000, { input: 0.05, cachedInput: 0.005, output: 0.4 }, '2026-06-21', light, 128_000),
  m('openai', 'gpt-4.1', 1_047_576, { input: 2, cachedInput: 0.5, output: 8 }, '2026-06-21', standard, 32_768),
  m('openai', 'gpt-4.1-mini', 1_047_576, { input: 0.4, cachedInput: 0.1, output: 1.6 }, '2026-06-21', light, 32_768),
  m('openai', 'gpt-4.1-nano', 1_047_576, { input: 0.1, cachedInput: 0.025, output: 0.4 }, '2026-06-21', light, 32_768),
  m('openai', 'gpt-4o', 128_000, { input: 2.5, cachedInput: 1.25, output: 10 }, '2026-06-21', standard, 16_384),
  m('openai', 'gpt-4o-mini', 128_000, { input: 0.15, cachedInput: 0.075, output: 0.6 }, '2026-06-21', light, 16_384),
  m('openai', 'o3', 200_000, { input: 2, cachedInput: 0.5, output: 8 }, '2026-06-21', frontier, 100_000),
  m('openai', 'o4-mini', 200_000, { input: 1.1, cachedInput: 0.275, output: 4.4 }, '2026-06-21', frontier, 100_000),
  m('anthropic', 'claude-opus-4-1', 200_000, { input: 15, cachedInput: 1.5, cacheWrite: 18.75, output: 75 }, '2026-06-21', frontier, 32_000),
  m('anthropic', 'claude-sonnet-4-5', 200_000, { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }, '2026-06-21', frontier, 64_000),
  m('anthropic', 'claude-haiku-4-5', 200_000, { input: 1, cachedInput: 0.1, cacheWrite: 1.25, output: 5 }, '2026-06-21', standard, 64_000),
  m('anthropic', 'claude-3-5-haiku-latest', 200_000, { input: 0.8, cachedInput: 0.08, cacheWrite: 1, output: 4 }, '2026-06-21', light, 8_192),
  m('groq', 'llama-3.3-70b-versatile', 131_072, { input: 0.59, cachedInput: 0.59, output: 0.79 }, '2026-06-21', standardText),
  m('groq', 'llama-3.1-8b-instant', 131_072, { input: 0.05, cachedInput: 0.05, output: 0.08 }, '2026-06-21', lightText),
  m('mistral', 'mistral-large-latest', 131_072, { input: 2, cachedInput: 2, output: 6 }, '2026-06-21', standardText),
  m('mistral', 'mistral-small-latest', 131_072, { input: 0.1, cachedInput: 0.1, output: 0.3 }, '2026-06-21', light),
  m('deepseek', 'deepseek-chat', 128_000, { input: 0.28, cachedInput: 0.028, output: 0.42 }, '2026-06-21', standardText, 8_192),
  m('deepseek', 'deepseek-reasoner', 128_000, { input: 0.28, cachedInput: 0.028, output: 0.42 }, '2026-06-21', frontierText, 64_000),
  m('together', 'meta-llama/Llama-3.3-70B-Instruct-Turbo', 131_072, { input: 0.88, cachedInput: 0.88, output: 0.88 }, '2026-06-21', standardText),
  m('fireworks', 'accounts/fireworks/models/llama-v3p3-70b-instruct', 131_072, { input: 0.9, cachedInput: 0.9, output: 0.9 }, '2026-06-21', standardText),
  m('xai', 'grok-4', 256_000, { input: 3, cachedInput: 0.75, output: 15 }, '2026-06-21', frontier),
  m('xai', 'grok-3-mini', 131_072, { input: 0.3, cachedInput: 0.075, output: 0.5 }, '2026-06-21', standardText),
  m('openrouter', 'openai/gpt-4o-mini', 128_000, { input: 0.15, cachedInput: 0.075, output: 0.6 }, '2026-06-21', light, 16_384),
  m('openrouter', 'anthropic/claude-sonnet-4.5', 200_000, { input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15 }, '2026-06-21', frontier),
];

/**
 * Embedding models (POST /v1/embeddings), a list apart from MODELS so that
 * routing, which reads MODELS alone (tiers, `auto`, fallbacks, context
 * windows), never sees one, and no chat call is routed to one. Priced per
 * million input tokens, output 0 (an embedding has no output tokens);
 * `contextWindow` is the most tokens one input may have. `tier` and
 * `vision` are not read for these (routing never sees them).
 */
const embedding = (provider: string, id: string, maxInputTokens: number, input: number, pricesRead: string): CatalogModel =>
  m(provider, id, maxInputTokens, { input, cachedInput: input, output: 0 }, pricesRead, lightText);

export const EMBEDDING_MODELS: readonly CatalogModel[] = [
  embedding('openai', 'text-embedding-3-small', 8191, 0.02, '2026-12-02'),
  embedding('openai', 'text-embedding-3-large', 8191, 0.13, '2026-12-02'),
  embedding('openai', 'text-embedding-ada-002', 8191, 0.1, '2026-12-02'),
  embedding('mistral', 'mistral-embed', 8192, 0.1, '2026-12-02'),
];
