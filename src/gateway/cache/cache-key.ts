import { hash } from 'node:crypto';
import type { ChatRequest } from '../providers/types.ts';
import { canonicalJson } from './canonical-json.ts';

/**
 * The format of a Chat Completions key. Bump it whenever what goes into the
 * key, or how, changes: entries under the old version are then never read
 * again (they expire), rather than read with a different meaning. Each
 * surface's key has a version of its own (its AnswerFormat), so that two
 * surfaces never share an entry.
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
 * A response-cache key: SHA-256 (base64url) of the key version, the tenant,
 * the routed `provider/model`, the request headers that change the answer
 * when a surface has some (`headers`: its own text of them, NUL-free, as
 * header values are) and the canonical JSON of `keyed` (what of the body
 * can change the answer). Tenants never share a key; key order and
 * whitespace in the client's JSON never change it.
 */
export function answerKey(version: string, tenantId: string, target: string, keyed: Record<string, unknown>, headers?: string): string {
  const head = headers === undefined ? `${version}\0${tenantId}\0${target}` : `${version}\0${tenantId}\0${target}\0${headers}`;
  return hash('sha256', `${head}\0${canonicalJson(keyed)}`, 'base64url');
}

/** The fields of a request body but those named in `ignored`, in the body's order. */
export function keyedFields(body: Record<string, unknown>, ignored: ReadonlySet<string>): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const name of Object.keys(body)) if (!ignored.has(name)) fields[name] = body[name];
  return fields;
}

/**
 * The response-cache key of a chat request: every answer-changing field
 * (all but IGNORED). A request without `temperature` is keyed and cached
 * like any other, although the provider's default (1.0) is not
 * deterministic: the issue asks for it, and docs/gateway-cache.md says so.
 */
export function cacheKey(tenantId: string, target: string, body: ChatRequest): string {
  return answerKey(CACHE_KEY_VERSION, tenantId, target, keyedFields(body, IGNORED));
}
