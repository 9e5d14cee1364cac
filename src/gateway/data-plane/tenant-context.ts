import type { Clock } from '../../platform/clock.ts';
import type { CircuitKeys } from '../routing/circuit-breaker.ts';
import { circuitKeys } from '../routing/circuit-keys.ts';
import type { InvalidationBus } from '../invalidation.ts';
import { loadProviderKeys } from '../control-plane/provider-keys.ts';
import { parseTenantSettings, type TenantSettings } from '../control-plane/tenant-settings.ts';
import type { GatewayDb } from '../schema.ts';
import { storedResponseBytes } from '../surfaces/responses/store.ts';
import { storedBodyBytes } from '../usage/stored-body-bytes.ts';
import { BodyStorage, StorageRoom } from './body-storage.ts';
import { LoadingCache } from './loading-cache.ts';

/** What a data-plane call needs of its tenant: the provider keys in plaintext, the body-storage setting and the storage quota's room. */
export interface TenantContext {
  tenantId: string;
  /** By provider id; the base URL parsed and the key's circuits named once, when the tenant is loaded. */
  providerKeys: ReadonlyMap<string, { apiKey: string; baseUrl: URL; circuit: CircuitKeys }>;
  /** The providers with a key: model resolution and /v1/models look only at these. */
  keyed: ReadonlySet<string>;
  storeBodies: boolean;
  /** Set when storeBodies is: the cap on each body and the room left in the tenant's quota. */
  bodies: BodyStorage | undefined;
  /** The room left in the tenant's storage quota, which stored bodies and stored responses share. */
  storage: StorageRoom;
  /** The tenant's pipeline settings as stored (unset fields: the gateway's defaults, applied by each stage). */
  settings: TenantSettings;
}

/**
 * Tenants' contexts, cached in process like API keys: a provider key stored
 * or deleted, or a tenant setting changed, invalidates the tenant on every
 * replica. A key that no longer opens is left out, as if absent
 * (loadProviderKeys), and logged.
 */
export function tenantContexts(options: {
  db: GatewayDb;
  clock: Clock;
  bus: InvalidationBus;
  /** GATEWAY_ENCRYPTION_KEY, then the keys being retired. */
  encryptionKeys: readonly Buffer[];
  onUnreadableKey: (tenantId: string, provider: string) => void;
  /** GATEWAY_STORED_BODY_MAX_BYTES, GATEWAY_STORED_BODIES_QUOTA_BYTES (bodies and stored responses), and the bodies' retention. */
  storedBodies: { maxBytes: number; quotaBytes: number; retentionMs: number };
  ttlMs?: number;
  maxEntries?: number;
}) {
  const cache = new LoadingCache<string, TenantContext>({
    clock: options.clock,
    ttlMs: options.ttlMs ?? 60_000,
    maxEntries: options.maxEntries ?? 10_000,
    load: async (tenantId) => {
      const tenant = await options.db.selectFrom('tenants').select(['store_bodies', 'settings']).where('id', '=', tenantId).executeTakeFirst();
      if (!tenant) return undefined;
      const providerKeys = await loadProviderKeys(options.db, options.encryptionKeys, tenantId, (provider) =>
        options.onUnreadableKey(tenantId, provider),
      );
      const parsed = new Map(
        [...providerKeys].map(([provider, key]) => {
          const baseUrl = new URL(key.baseUrl);
          return [provider, { apiKey: key.apiKey, baseUrl, circuit: circuitKeys(tenantId, provider, baseUrl, key.apiKey) }];
        }),
      );
      const storeBodies = tenant.store_bodies === 1;
      const limits = options.storedBodies;
      // Whatever store_bodies says now: bodies kept while it was on, and every stored response, fill the same quota.
      const now = options.clock.now();
      const stored = (await storedBodyBytes(options.db, tenantId, now, limits.retentionMs)) + (await storedResponseBytes(options.db, tenantId, now));
      const storage = new StorageRoom(limits.quotaBytes, stored);
      const bodies = storeBodies ? new BodyStorage(limits.maxBytes, storage) : undefined;
      return { tenantId, providerKeys: parsed, keyed: new Set(parsed.keys()), storeBodies, bodies, storage, settings: parseTenantSettings(tenant.settings) };
    },
  });
  options.bus.subscribe((message) => {
    if (message.kind === 'tenant') cache.invalidate(message.tenantId);
    else if (message.kind === 'all') cache.clear();
  });
  return cache;
}

export type TenantContexts = ReturnType<typeof tenantContexts>;
