import type { Clock } from '../../platform/clock.ts';
import { decrypt } from '../../platform/crypto.ts';
import type { InvalidationBus } from '../invalidation.ts';
import { type GatewayDb, providerKeyAad } from '../schema.ts';
import { LoadingCache } from './loading-cache.ts';

/** What a data-plane call needs of its tenant: the provider keys in plaintext and the body-storage setting. */
export interface TenantContext {
  tenantId: string;
  providerKeys: ReadonlyMap<string, { apiKey: string; baseUrl: string | undefined }>;
  /** The providers with a key: model resolution and /v1/models look only at these. */
  keyed: ReadonlySet<string>;
  storeBodies: boolean;
}

/**
 * Tenants' contexts, cached in process like API keys: a provider key stored
 * or deleted, or a tenant setting changed, invalidates the tenant on every
 * replica. A key that no longer opens (a wrong GATEWAY_ENCRYPTION_KEY, a row
 * moved between tenants) is left out, as if absent, and logged once per load.
 */
export function tenantContexts(options: {
  db: GatewayDb;
  clock: Clock;
  bus: InvalidationBus;
  encryptionKey: Buffer;
  onUnreadableKey: (tenantId: string, provider: string) => void;
  ttlMs?: number;
  maxEntries?: number;
}) {
  const cache = new LoadingCache<string, TenantContext>({
    clock: options.clock,
    ttlMs: options.ttlMs ?? 60_000,
    maxEntries: options.maxEntries ?? 10_000,
    load: async (tenantId) => {
      const tenant = await options.db.selectFrom('tenants').select(['store_bodies']).where('id', '=', tenantId).executeTakeFirst();
      if (!tenant) return undefined;
      const rows = await options.db
        .selectFrom('provider_keys')
        .select(['provider', 'key_sealed', 'base_url'])
        .where('tenant_id', '=', tenantId)
        .execute();
      const providerKeys = new Map<string, { apiKey: string; baseUrl: string | undefined }>();
      for (const row of rows) {
        try {
          const apiKey = decrypt(options.encryptionKey, row.key_sealed, providerKeyAad(tenantId, row.provider));
          providerKeys.set(row.provider, { apiKey, baseUrl: row.base_url ?? undefined });
        } catch {
          options.onUnreadableKey(tenantId, row.provider);
        }
      }
      return { tenantId, providerKeys, keyed: new Set(providerKeys.keys()), storeBodies: tenant.store_bodies === 1 };
    },
  });
  options.bus.subscribe((message) => {
    if (message.kind === 'tenant') cache.invalidate(message.tenantId);
  });
  return cache;
}

export type TenantContexts = ReturnType<typeof tenantContexts>;
