import { decryptWithAny, encrypt } from '../../platform/crypto.ts';
import type { RotationCount } from '../../platform/key-rotation.ts';
import { fieldProblem, HttpProblem, tooManyRequests } from '../../platform/errors.ts';
import { checkUpstreamUrl, type UpstreamRefusalCode } from '../../platform/safe-connect.ts';
import type { LookupFn } from '../../platform/safe-fetch.ts';
import type { GatewayDeps } from '../deps.ts';
import { findProvider, type ProviderInfo } from '../providers/registry.ts';
import { type GatewayDb, providerKeyAad } from '../schema.ts';
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
  dns_failed: 'base_url_not_allowed',
};

/**
 * A host that resolves to a private address and one that does not resolve
 * get this same answer: two answers would tell a tenant which internal
 * names exist (`https://db.internal/v1`), as the account service's metadata
 * fetch learnt (one failure message for every fetch failure).
 */
const NOT_ALLOWED =
  'base_url refused: its host must resolve, and only to public addresses (a private, loopback, link-local or reserved address, or a name that does not resolve, is refused; GATEWAY_ALLOW_PRIVATE_UPSTREAMS can allow self-hosted upstreams).';

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
    const code = REFUSALS[check.code];
    if (code === 'base_url_not_allowed') throw fieldProblem(code, 'base_url', NOT_ALLOWED);
    const hint = check.code === 'insecure_scheme' ? ' (GATEWAY_ALLOW_PRIVATE_UPSTREAMS can allow self-hosted upstreams)' : '';
    throw fieldProblem(code, 'base_url', `base_url refused: ${check.message}${hint}.`);
  }
  return check.url.href.replace(/\/+$/, '');
}

/**
 * One point of the workspace's provider-key bucket (GATEWAY_LIMIT_PROVIDER_KEYS),
 * taken before each store or test: each resolves a host the tenant chose,
 * or calls the provider, and tells every replica to drop the tenant's cache.
 */
export async function takeProviderKeyPoint(deps: Pick<GatewayDeps, 'limiters' | 'metrics'>, tenantId: string): Promise<void> {
  const bucket = await deps.limiters.providerKeys.consume(tenantId);
  if (bucket.allowed) return;
  deps.metrics.rateLimited.inc({ bucket: 'provider_keys' });
  throw tooManyRequests('rate_limited', 'Too many provider keys were stored or tested for this workspace recently; try again later.', bucket.retryAfterMs);
}

/** Stores (or replaces) the tenant's key for a provider; then tells the data plane's caches. */
export async function putProviderKey(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'tenantChanged' | 'limiters' | 'metrics'>,
  tenantId: string,
  input: { provider: string; key: string; baseUrl?: string | undefined },
  lookup?: LookupFn,
): Promise<ProviderKeyMetadata> {
  const provider = requireProvider(input.provider);
  const key = input.key.trim();
  if (key.length < 8) throw fieldProblem('invalid_key', 'key', 'The provider key must be at least 8 characters.');
  await takeProviderKeyPoint(deps, tenantId);
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
 * The data plane's read side: every provider key of a tenant, opened with
 * the first of `keys` that opens it (GATEWAY_ENCRYPTION_KEY, then any
 * being retired: GATEWAY_ENCRYPTION_KEY_PREVIOUS). A key that opens with
 * none (the key changed without a rotation, or a row tampered with) or
 * whose provider left the registry is left out and reported through
 * `onUnreadable`, so one bad row does not take the tenant's other
 * providers down.
 */
export async function loadProviderKeys(
  db: GatewayDb,
  keys: readonly Buffer[],
  tenantId: string,
  onUnreadable: (provider: string) => void = () => {},
): Promise<Map<string, ProviderCredentials>> {
  const rows = await db.selectFrom('provider_keys').select(['provider', 'key_sealed', 'base_url']).where('tenant_id', '=', tenantId).execute();
  const opened = new Map<string, ProviderCredentials>();
  for (const row of rows) {
    const baseUrl = row.base_url ?? findProvider(row.provider)?.baseUrl;
    let apiKey: string;
    try {
      apiKey = decryptWithAny(keys, row.key_sealed, providerKeyAad(tenantId, row.provider)).plaintext;
    } catch {
      onUnreadable(row.provider);
      continue;
    }
    if (baseUrl === undefined) onUnreadable(row.provider);
    else opened.set(row.provider, { apiKey, baseUrl });
  }
  return opened;
}

/**
 * `npm run rotate-keys`: every stored provider key that a retired key
 * sealed, sealed again under `key`, page by page. A row is updated only if
 * it still holds what was read (compare and set): a key a tenant replaced
 * meanwhile was sealed under the current key already. A row that opens
 * with no key is left as it is and named (tenant and provider, never the
 * key).
 */
export async function resealProviderKeys(db: GatewayDb, key: Buffer, retired: readonly Buffer[]): Promise<RotationCount> {
  const count: RotationCount = { what: 'gateway provider keys', resealed: 0, current: 0, unreadable: [] };
  const keys = [key, ...retired];
  let after = { tenant: '', provider: '' };
  for (;;) {
    const rows = await db
      .selectFrom('provider_keys')
      .select(['tenant_id', 'provider', 'key_sealed'])
      .where((eb) => eb.or([eb('tenant_id', '>', after.tenant), eb.and([eb('tenant_id', '=', after.tenant), eb('provider', '>', after.provider)])]))
      .orderBy('tenant_id')
      .orderBy('provider')
      .limit(500)
      .execute();
    if (rows.length === 0) return count;
    const last = rows.at(-1)!;
    after = { tenant: last.tenant_id, provider: last.provider };
    for (const row of rows) {
      const aad = providerKeyAad(row.tenant_id, row.provider);
      let opened: { plaintext: string; keyIndex: number };
      try {
        opened = decryptWithAny(keys, row.key_sealed, aad);
      } catch {
        count.unreadable.push(`tenant ${row.tenant_id} provider ${row.provider}`);
        continue;
      }
      if (opened.keyIndex === 0) {
        count.current++;
        continue;
      }
      const updated = await db
        .updateTable('provider_keys')
        .set({ key_sealed: encrypt(key, opened.plaintext, aad) })
        .where('tenant_id', '=', row.tenant_id)
        .where('provider', '=', row.provider)
        .where('key_sealed', '=', row.key_sealed)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 1) count.resealed++;
      else count.current++;
    }
  }
}
