import { sha256 } from '../../platform/crypto.ts';
import type { CircuitKeys } from './circuit-breaker.ts';

/**
 * The circuits of a tenant's provider key (routing/circuit-breaker.ts),
 * built once when the tenant is loaded (data-plane/tenant-context.ts), so a
 * call allocates nothing for them:
 * - its own: tenant, provider, the full base URL (origin and path: two
 *   tenants' servers under one host are two circuits) and the key's id, a
 *   SHA-256 prefix (the secret itself is never a map key); a replaced key
 *   starts a fresh circuit;
 * - the origin's, shared by every tenant calling that provider there:
 *   provider and scheme://host:port.
 */
export function circuitKeys(tenantId: string, provider: string, baseUrl: URL, apiKey: string): CircuitKeys {
  const keyId = sha256(apiKey).slice(0, 16);
  return { own: `${tenantId} ${provider} ${baseUrl.href} ${keyId}`, origin: `${provider} ${baseUrl.origin}`, tenantId, provider };
}
