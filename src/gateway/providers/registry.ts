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
  /**
   * How the provider takes a prompt-cache routing key (the prompt-cache
   * stage's plan.key), so a conversation's turns reach the machine holding
   * its prefix. 'prompt_cache_key': OpenAI's body field (chat completions
   * reference). 'x-grok-conv-id': xAI's header, its routing key on chat
   * completions (its prompt_cache_key works only on the Responses API).
   * Unset: never sent; a field a provider does not document can be refused
   * (Mistral answers unknown fields with 422 extra_forbidden, Groq with 400).
   */
  promptCacheKey?: 'prompt_cache_key' | 'x-grok-conv-id';
}

const openai = (id: string, name: string, baseUrl: string): ProviderInfo => ({
  id,
  name,
  format: 'openai',
  baseUrl,
  requiresBaseUrl: false,
});

export const PROVIDERS: readonly ProviderInfo[] = [
  { ...openai('openai', 'OpenAI', 'https://api.openai.com/v1'), promptCacheKey: 'prompt_cache_key' },
  openai('groq', 'Groq', 'https://api.groq.com/openai/v1'),
  { ...openai('mistral', 'Mistral', 'https://api.mistral.ai/v1'), streamUsage: 'always' },
  openai('together', 'Together AI', 'https://api.together.xyz/v1'),
  openai('deepseek', 'DeepSeek', 'https://api.deepseek.com/v1'),
  openai('fireworks', 'Fireworks AI', 'https://api.fireworks.ai/inference/v1'),
  openai('openrouter', 'OpenRouter', 'https://openrouter.ai/api/v1'),
  { ...openai('xai', 'xAI', 'https://api.x.ai/v1'), promptCacheKey: 'x-grok-conv-id' },
  { id: 'openai-compatible', name: 'OpenAI-compatible server', format: 'openai', baseUrl: undefined, requiresBaseUrl: true },
  { id: 'anthropic', name: 'Anthropic', format: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', requiresBaseUrl: false },
];

const byId = new Map(PROVIDERS.map((p) => [p.id, p]));

/** The provider with this id, or undefined. */
export function findProvider(id: string): ProviderInfo | undefined {
  return byId.get(id);
}
