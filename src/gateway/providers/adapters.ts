import { anthropicAdapter } from './anthropic/index.ts';
import { openAiCompatibleAdapter } from './openai-compatible/index.ts';
import type { ProviderInfo, WireFormat } from './registry.ts';
import type { ProviderAdapter } from './types.ts';

export interface AdapterOptions {
  /** max_tokens sent to Anthropic when the client gave none (GATEWAY_ANTHROPIC_DEFAULT_MAX_TOKENS). */
  anthropicDefaultMaxTokens: number;
}

/** Wire format -> adapter factory: data, not a switch. A factory takes the provider's display name for its error messages. */
const FACTORIES: Record<WireFormat, (provider: string, options: AdapterOptions) => ProviderAdapter> = {
  openai: (provider) => openAiCompatibleAdapter(provider),
  anthropic: (provider, options) => anthropicAdapter(provider, options),
};

/** The adapter for one provider (its format decides; its name appears in error messages). */
export function adapterFor(provider: Pick<ProviderInfo, 'format' | 'name'>, options: AdapterOptions): ProviderAdapter {
  return FACTORIES[provider.format](provider.name, options);
}

/** Every provider's adapter by provider id, built once at start. */
export function buildAdapters(providers: readonly ProviderInfo[], options: AdapterOptions): Map<string, ProviderAdapter> {
  return new Map(providers.map((p) => [p.id, adapterFor(p, options)]));
}
