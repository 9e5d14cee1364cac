import type { IncomingHttpHeaders } from 'node:http';
import { invalidHeader } from '../openai-errors.ts';
import type { PromptCacheSettings } from '../settings/prompt-cache.ts';

export const PROMPT_CACHE_HEADER = 'x-gateway-prompt-cache';

/**
 * Whether a call gets prompt-cache hints:
 * 1. `X-Gateway-Prompt-Cache: off`: never; `on`: always, even without a
 *    session (for a long prompt shared by unrelated calls);
 * 2. otherwise the tenant's `prompt_cache.enabled` (default true), for calls
 *    that carry X-Gateway-Session-Id: a conversation is what repeats its
 *    prefix, and a breakpoint on a prompt nobody sends again only pays
 *    Anthropic's write premium.
 * Any other value (or the header sent twice) is a 400 naming the header.
 */
export function promptCacheWanted(headers: IncomingHttpHeaders, settings: PromptCacheSettings | undefined, sessionId: string | undefined): boolean {
  const raw = headers[PROMPT_CACHE_HEADER];
  if (raw === undefined) return settings?.enabled !== false && sessionId !== undefined;
  const value = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined;
  if (value === 'off') return false;
  if (value === 'on') return true;
  throw invalidHeader('X-Gateway-Prompt-Cache', 'must be "on" or "off".');
}
