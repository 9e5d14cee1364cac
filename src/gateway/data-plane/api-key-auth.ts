import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import { sha256 } from '../../platform/crypto.ts';
import { bearerToken } from '../../platform/http.ts';
import { SESSION_PREFIX } from '../control-plane/gateway-sessions.ts';
import type { InvalidationBus } from '../invalidation.ts';
import { invalidApiKey, missingApiKey, sessionNotApiKey } from '../openai-errors.ts';
import type { GatewayDb } from '../schema.ts';
import { type Limits, parseLimits } from '../settings/limits.ts';
import { LoadingCache } from './loading-cache.ts';

/** Who is calling: the key and its tenant, and the key's own limits (undefined: none, the common case the budgets stage skips). */
export interface ApiKeyPrincipal {
  keyId: string;
  tenantId: string;
  limits: Limits | undefined;
}

/** The `x-api-key` header, sent once. */
function xApiKey(request: FastifyRequest): string | undefined {
  const value = request.headers['x-api-key'];
  return typeof value === 'string' && value !== '' ? value.trim() : undefined;
}

/** sk-gw- and 43 base64url characters (32 bytes). */
const KEY_SHAPE = /^sk-gw-[A-Za-z0-9_-]{43}$/;

declare module 'fastify' {
  interface FastifyRequest {
    principal: ApiKeyPrincipal;
  }
}

/**
 * API keys by SHA-256, cached in process. Only live keys are cached (an
 * unknown or revoked key is read again each time, so a key created a moment
 * ago works at once); a revocation anywhere reaches every replica through
 * the invalidation bus, and entries expire after `ttlMs` regardless. A
 * change of the key's limits is told the same way (the key is reloaded
 * with its new limits on every replica).
 */
export function apiKeyStore(options: { db: GatewayDb; clock: Clock; bus: InvalidationBus; ttlMs?: number; maxEntries?: number }) {
  const cache = new LoadingCache<string, ApiKeyPrincipal>({
    clock: options.clock,
    ttlMs: options.ttlMs ?? 60_000,
    maxEntries: options.maxEntries ?? 100_000,
    load: async (keyHash) => {
      const row = await options.db
        .selectFrom('api_keys')
        .select(['id', 'tenant_id', 'limits'])
        .where('key_hash', '=', keyHash)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return row ? { keyId: row.id, tenantId: row.tenant_id, limits: parseLimits(row.limits) } : undefined;
    },
  });
  options.bus.subscribe((message) => {
    if (message.kind === 'api-key') cache.invalidate(message.keyHash);
    else if (message.kind === 'all') cache.clear();
  });
  return cache;
}

export type ApiKeyStore = ReturnType<typeof apiKeyStore>;

/**
 * The data plane's onRequest hook: `Authorization: Bearer sk-gw-...`, or
 * `x-api-key: sk-gw-...` as Anthropic's clients send it (Claude Code sends
 * either, depending on which of its variables holds the key); refused in
 * the surface's error shape when missing or wrong (401 raises the SDKs'
 * AuthenticationError). A console session token sent here is named as such.
 */
export function requireGatewayKey(store: ApiKeyStore) {
  return function gatewayKeyHook(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
    const token = bearerToken(request) ?? xApiKey(request);
    const refused =
      token === undefined ? missingApiKey() : token.startsWith(SESSION_PREFIX) ? sessionNotApiKey() : KEY_SHAPE.test(token) ? undefined : invalidApiKey();
    if (refused || token === undefined) {
      done(refused);
      return;
    }
    const keyHash = sha256(token);
    const cached = store.peek(keyHash);
    if (cached) {
      request.principal = cached;
      done();
      return;
    }
    store.get(keyHash).then(
      (principal) => {
        if (principal) request.principal = principal;
        done(principal ? undefined : invalidApiKey());
      },
      (err: Error) => done(err),
    );
  };
}
