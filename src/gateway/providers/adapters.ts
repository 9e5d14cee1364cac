import { anthropicAdapter } from './anthropic/index.ts';
import { openAiCompatibleAdapter } from './openai-compatible/index.ts';
import type { ProviderInfo, WireFormat } from './registry.ts';
import type { ChatRequest, ProviderAdapter } from './types.ts';

export interface AdapterOptions {
  /** max_tokens sent to Anthropic when the client gave none (GATEWAY_ANTHROPIC_DEFAULT_MAX_TOKENS). */
  anthropicDefaultMaxTokens: number;
}

type AdapterInfo = Pick<ProviderInfo, 'format' | 'name' | 'streamUsage' | 'promptCacheKey'>;

/** Wire format -> adapter factory: data, not a switch. The provider's name appears in error messages. */
const FACTORIES: Record<WireFormat, (provider: AdapterInfo, options: AdapterOptions) => ProviderAdapter> = {
  openai: (provider) => openAiCompatibleAdapter(provider),
  anthropic: (provider, options) => anthropicAdapter(provider.name, options),
};

/** The adapter for one provider (its format decides). */
export function adapterFor(provider: AdapterInfo, options: AdapterOptions): ProviderAdapter {
  return FACTORIES[provider.format](provider, options);
}

/** Every provider's adapter by provider id, built once at start. */
export function buildAdapters(providers: readonly ProviderInfo[], options: AdapterOptions): Map<string, ProviderAdapter> {
  return new Map(providers.map((p) => [p.id, adapterFor(p, options)]));
}

/** Whether the client asked for the usage chunk of a stream (StreamOptions.includeUsage); adapters ask the provider regardless. */
export function clientWantsUsage(request: ChatRequest): boolean {
  return request.stream_options?.include_usage === true;
}
