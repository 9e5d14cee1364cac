import { decrypt, encrypt } from '../platform/crypto.ts';
import { fieldProblem, HttpProblem } from '../platform/errors.ts';
import { checkUpstreamUrl, type UpstreamRefusalCode } from '../platform/safe-connect.ts';
import type { LookupFn } from '../platform/safe-fetch.ts';
import type { GatewayDeps } from './deps.ts';
import { findProvider, type ProviderInfo } from './providers/registry.ts';
import { type GatewayDb, providerKeyAad } from './schema.ts';
import { upstreamPolicy } from './upstream-policy.ts';

/**
 * A tenant's keys for upstream providers. Table `provider_keys`, one row per
 * (tenant, provider): the key sealed with AES-256-GCM under
 * GATEWAY_ENCRYPTION_KEY, bound by associated data to its tenant and
 * provider (a sealed key copied to another row does not open); only its
 * last four characters are ever shown again.
 */
export interface ProviderKeyMetadata {
  provider: string;
  base_url: string | null;
  key_last4: string;
  created_at: string;
}

function requireProvider(id: string): ProviderInfo {
  const provider = findProvider(id);
  if (!provider) throw fieldProblem('unknown_provider', 'provider', `"${id.slice(0, 64)}" is not a provider this gateway knows; see docs/api.md for the list.`);
  return provider;
}

const REFUSALS: Record<UpstreamRefusalCode, string> = {
  invalid_url: 'invalid_base_url',
  insecure_scheme: 'invalid_base_url',
  userinfo_not_allowed: 'invalid_base_url',
  fragment_not_allowed: 'invalid_base_url',
  forbidden_address: 'base_url_not_allowed',
  dns_failed: 'base_url_unresolvable',
};

/**
 * The base URL as it will be stored (no trailing slash), checked by the
 * platform's SSRF rules under GATEWAY_ALLOW_PRIVATE_UPSTREAMS. The data
 * plane's connector checks every connection again (DNS can change).
 */
async function requireBaseUrl(deps: Pick<GatewayDeps, 'config'>, provider: ProviderInfo, baseUrl: string | undefined, lookup?: LookupFn): Promise<string | null> {
  if (baseUrl === undefined || baseUrl.trim() === '') {
    if (provider.requiresBaseUrl) throw fieldProblem('base_url_required', 'base_url', `The ${provider.name} provider needs a base_url (e.g. http://10.0.0.5:8000/v1).`);
    return null;
  }
  const check = await checkUpstreamUrl(baseUrl.trim(), upstreamPolicy(deps.config.allowPrivateUpstreams), lookup);
  if (!check.ok) {
    const hint = check.code === 'forbidden_address' || check.code === 'insecure_scheme' ? ' (GATEWAY_ALLOW_PRIVATE_UPSTREAMS can allow self-hosted upstreams)' : '';
    throw fieldProblem(REFUSALS[check.code], 'base_url', `base_url refused: ${check.message}${hint}.`);
  }
  return check.url.href.replace(/\/+$/, '');
}

/** Stores (or replaces) the tenant's key for a provider; then tells the data plane's caches. */
export async function putProviderKey(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'tenantChanged'>,
  tenantId: string,
  input: { provider: string; key: string; baseUrl?: string | undefined },
  lookup?: LookupFn,
): Promise<ProviderKeyMetadata> {
  const provider = requireProvider(input.provider);
  const key = input.key.trim();
  if (key.length < 8) throw fieldProblem('invalid_key', 'key', 'The provider key must be at least 8 characters.');
  const baseUrl = await requireBaseUrl(deps, provider, input.baseUrl, lookup);
  const now = deps.clock.now();
  const row = {
    tenant_id: tenantId,
    provider: provider.id,
    key_sealed: encrypt(deps.config.encryptionKey, key, providerKeyAad(tenantId, provider.id)),
    key_last4: key.slice(-4),
    base_url: baseUrl,
    created_at: now,
  };
  await deps.db
    .insertInto('provider_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['tenant_id', 'provider']).doUpdateSet({ key_sealed: row.key_sealed, key_last4: row.key_last4, base_url: baseUrl, created_at: now }))
    .execute();
  await deps.tenantChanged(tenantId);
  return { provider: provider.id, base_url: baseUrl, key_last4: row.key_last4, created_at: new Date(now).toISOString() };
}

export async function listProviderKeys(deps: Pick<GatewayDeps, 'db'>, tenantId: string): Promise<ProviderKeyMetadata[]> {
  const rows = await deps.db
    .selectFrom('provider_keys')
    .select(['provider', 'base_url', 'key_last4', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .orderBy('provider')
    .execute();
  return rows.map((r) => ({ ...r, created_at: new Date(r.created_at).toISOString() }));
}

/** Deletes the tenant's key for a provider; idempotent (no key: the same 204). */
export async function deleteProviderKey(deps: Pick<GatewayDeps, 'db' | 'tenantChanged'>, tenantId: string, providerId: string): Promise<void> {
  if (!findProvider(providerId)) throw new HttpProblem(404, 'unknown_provider', `"${providerId.slice(0, 64)}" is not a provider this gateway knows.`);
  await deps.db.deleteFrom('provider_keys').where('tenant_id', '=', tenantId).where('provider', '=', providerId).execute();
  await deps.tenantChanged(tenantId);
}

export interface ProviderCredentials {
  apiKey: string;
  /** The tenant's base_url, or the provider's default. */
  baseUrl: string;
}

/**
 * The data plane's read side: every provider key of a tenant, opened. A key
 * that does not open (GATEWAY_ENCRYPTION_KEY changed, or a row tampered
 * with) or whose provider left the registry is left out and reported
 * through `onUnreadable`, so one bad row does not take the tenant's other
 * providers down.
 */
export async function loadProviderKeys(
  db: GatewayDb,
  key: Buffer,
  tenantId: string,
  onUnreadable: (provider: string) => void = () => {},
): Promise<Map<string, ProviderCredentials>> {
  const rows = await db.selectFrom('provider_keys').select(['provider', 'key_sealed', 'base_url']).where('tenant_id', '=', tenantId).execute();
  const keys = new Map<string, ProviderCredentials>();
  for (const row of rows) {
    const baseUrl = row.base_url ?? findProvider(row.provider)?.baseUrl;
    let apiKey: string;
    try {
      apiKey = decrypt(key, row.key_sealed, providerKeyAad(tenantId, row.provider));
    } catch {
      onUnreadable(row.provider);
      continue;
    }
    if (baseUrl === undefined) onUnreadable(row.provider);
    else keys.set(row.provider, { apiKey, baseUrl });
  }
  return keys;
}
