import { hash } from 'node:crypto';

/**
 * The `prompt_cache_key` the gateway sends when the client set none: a hash
 * of the tenant and the session (X-Gateway-Session-Id), so that one
 * conversation's turns are routed to the machine that holds its prefix
 * (OpenAI docs, "Prompt caching": requests are routed by a hash of the
 * prompt's start combined with the key) and no tenant id or session name
 * reaches the provider. Without a session (X-Gateway-Prompt-Cache: on), one
 * key per tenant. 32 base64url characters (192 bits).
 */
export function promptCacheKey(tenantId: string, sessionId: string | undefined): string {
  return `gw-${hash('sha256', `${tenantId}\0${sessionId ?? ''}`, 'base64url').slice(0, 32)}`;
}
