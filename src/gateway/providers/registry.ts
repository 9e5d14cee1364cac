/**
 * The providers a tenant can store a key for: data, not a switch. `format`
 * names the adapter (providers/adapters.ts); `baseUrl` is the default
 * upstream (a tenant's base_url replaces it); `requiresBaseUrl` providers
 * have no default.
 */
export type WireFormat = 'openai' | 'anthropic';

export interface ProviderInfo {
  id: string;
  name: string;
  format: WireFormat;
  baseUrl: string | undefined;
  requiresBaseUrl: boolean;
  /**
   * How a stream reports usage. Unset: when asked with OpenAI's
   * `stream_options.include_usage`. 'always': unasked, in the last chunk,
   * and the provider refuses `stream_options` (Mistral answers 422
   * extra_forbidden), so the field is not sent.
   */
  streamUsage?: 'always';
}

const openai = (id: string, name: string, baseUrl: string): ProviderInfo => ({
  id,
  name,
  format: 'openai',
  baseUrl,
  requiresBaseUrl: false,
});

export const PROVIDERS: readonly ProviderInfo[] = [
  openai('openai', 'OpenAI', 'https://api.openai.com/v1'),
  openai('groq', 'Groq', 'https://api.groq.com/openai/v1'),
  { ...openai('mistral', 'Mistral', 'https://api.mistral.ai/v1'), streamUsage: 'always' },
  openai('together', 'Together AI', 'https://api.together.xyz/v1'),
  openai('deepseek', 'DeepSeek', 'https://api.deepseek.com/v1'),
  openai('fireworks', 'Fireworks AI', 'https://api.fireworks.ai/inference/v1'),
  openai('openrouter', 'OpenRouter', 'https://openrouter.ai/api/v1'),
  openai('xai', 'xAI', 'https://api.x.ai/v1'),
  { id: 'openai-compatible', name: 'OpenAI-compatible server', format: 'openai', baseUrl: undefined, requiresBaseUrl: true },
  { id: 'anthropic', name: 'Anthropic', format: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', requiresBaseUrl: false },
];

const byId = new Map(PROVIDERS.map((p) => [p.id, p]));

/** The provider with this id, or undefined. */
export function findProvider(id: string): ProviderInfo | undefined {
  return byId.get(id);
}
