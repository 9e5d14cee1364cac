import { hash } from 'node:crypto';
import type { ChatRequest } from '../providers/types.ts';
import { canonicalJson } from './canonical-json.ts';

/**
 * The format of the key. Bump it whenever what goes into the key, or how,
 * changes: entries under the old version are then never read again (they
 * expire), rather than read with a different meaning.
 */
export const CACHE_KEY_VERSION = 'chat.completions/v1';

/**
 * Fields that cannot change the answer: left out of the key, so that the
 * same question streamed or not, from another end user or with other
 * metadata, shares one entry. `model` is left out too: the key names the
 * routed provider/model instead, so `gpt-4o-mini` and `openai/gpt-4o-mini`
 * share entries. Every other field, known or not, is in the key (LESSONS:
 * parameters left out of a key served wrong answers).
 */
const IGNORED = new Set(['model', 'user', 'stream', 'stream_options', 'metadata']);

/**
 * The response-cache key of a chat request: SHA-256 (base64url) of the key
 * version, the tenant, the routed `provider/model` and the canonical JSON
 * of every answer-changing field. Tenants never share a key; key order and
 * whitespace in the client's JSON never change it. A request without
 * `temperature` is keyed and cached like any other, although the
 * provider's default (1.0) is not deterministic: the issue asks for it,
 * and docs/gateway-cache.md says so.
 */
export function cacheKey(tenantId: string, target: string, body: ChatRequest): string {
  const fields: Record<string, unknown> = {};
  for (const name of Object.keys(body)) if (!IGNORED.has(name)) fields[name] = body[name];
  return hash('sha256', `${CACHE_KEY_VERSION}\0${tenantId}\0${target}\0${canonicalJson(fields)}`, 'base64url');
}
