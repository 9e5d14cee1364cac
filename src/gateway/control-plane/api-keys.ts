import { randomUUID } from 'node:crypto';
import { randomToken, sha256 } from '../../platform/crypto.ts';
import { fieldProblem, HttpProblem, tooManyRequests } from '../../platform/errors.ts';
import type { GatewayDeps } from '../deps.ts';
import type { GatewayDb, GatewayTables } from '../schema.ts';
import { type Limits, parseLimits } from '../settings/limits.ts';

/**
 * Data-plane API keys. Table `api_keys`; a key is `sk-gw-` + 32 random bytes
 * (base64url), returned once; only its SHA-256 is stored. `prefix` (the
 * first 10 characters: 4 random ones, 24 bits) tells keys apart in a list
 * and is never enough to use.
 */
export const API_KEY_PREFIX = 'sk-gw-';
const DISPLAY_LENGTH = API_KEY_PREFIX.length + 4;

export interface ApiKeyMetadata {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  /** The key's own limits (`{}`: none; its tenant's still apply). */
  limits: Limits;
}

type ApiKeyRow = GatewayTables['api_keys'];

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

type MetadataColumns = 'id' | 'name' | 'prefix' | 'created_at' | 'last_used_at' | 'limits';
const METADATA_COLUMNS: MetadataColumns[] = ['id', 'name', 'prefix', 'created_at', 'last_used_at', 'limits'];

function toMetadata(row: Pick<ApiKeyRow, MetadataColumns>): ApiKeyMetadata {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    created_at: iso(row.created_at)!,
    last_used_at: iso(row.last_used_at),
    limits: parseLimits(row.limits) ?? {},
  };
}

/** The longest key name (the API's schema and the console's form both hold to it). */
export const KEY_NAME_MAX = 100;

export function requireKeyName(input: string): string {
  const name = input.trim();
  if (name === '') throw new HttpProblem(400, 'invalid_name', 'The key name must not be empty.', { errors: [{ field: 'name', message: 'is empty' }] });
  if (name.length > KEY_NAME_MAX) throw fieldProblem('invalid_name', 'name', `The key name must be at most ${KEY_NAME_MAX} characters.`);
  return name;
}

/** Stores a fresh key for a tenant, in the caller's transaction (signup uses its own). */
export async function insertApiKey(
  db: GatewayDb,
  now: number,
  tenantId: string,
  name: string,
  limits: Limits = {},
): Promise<ApiKeyMetadata & { key: string }> {
  const key = randomToken(API_KEY_PREFIX);
  const row: ApiKeyRow = {
    id: randomUUID(),
    tenant_id: tenantId,
    name,
    key_hash: sha256(key),
    prefix: key.slice(0, DISPLAY_LENGTH),
    created_at: now,
    last_used_at: null,
    revoked_at: null,
    limits: JSON.stringify(limits),
  };
  await db.insertInto('api_keys').values(row).execute();
  return { ...toMetadata(row), key };
}

/**
 * POST /api/v1/tenant/api-keys and the console's form. Preconditions, in
 * this order (cheapest first):
 * 1. the name is valid;
 * 2. the workspace's creation bucket has a point (GATEWAY_LIMIT_API_KEY_CREATE): 429 `rate_limited`;
 * 3. the workspace holds fewer than GATEWAY_MAX_API_KEYS_PER_TENANT live
 *    keys: 409 `api_key_limit_reached`. Counted and inserted in one
 *    transaction that first locks the tenant's row (PostgreSQL; a SQLite
 *    transaction holds the write lock from its start), so concurrent
 *    creations cannot pass the cap together.
 * Revoked keys do not count; their rows are purged once the usage records
 * that name them are (GATEWAY_USAGE_RETENTION_DAYS after the revocation).
 */
export async function createApiKey(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'dialect' | 'limiters' | 'metrics'>,
  tenantId: string,
  name: string,
  limits?: Limits,
): Promise<ApiKeyMetadata & { key: string }> {
  const keyName = requireKeyName(name);
  const bucket = await deps.limiters.apiKeyCreate.consume(tenantId);
  if (!bucket.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'api_key_create' });
    throw tooManyRequests('rate_limited', 'Too many API keys were created for this workspace recently; try again later.', bucket.retryAfterMs);
  }
  const max = deps.config.maxApiKeysPerTenant;
  return deps.db.transaction().execute(async (trx) => {
    let lock = trx.selectFrom('tenants').select('id').where('id', '=', tenantId);
    if (deps.dialect === 'postgres') lock = lock.forUpdate();
    await lock.execute();
    const live = await trx
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tenant_id', '=', tenantId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(live.n) >= max) {
      throw new HttpProblem(409, 'api_key_limit_reached', `This workspace already has ${max} live API keys; revoke one before creating another.`);
    }
    return insertApiKey(trx, deps.clock.now(), tenantId, keyName, limits);
  });
}

/** The tenant's live keys, newest first: metadata only. */
export async function listApiKeys(deps: Pick<GatewayDeps, 'db'>, tenantId: string): Promise<ApiKeyMetadata[]> {
  const rows = await deps.db
    .selectFrom('api_keys')
    .select(METADATA_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
  return rows.map(toMetadata);
}

/**
 * Revokes one of the tenant's keys, then tells every replica's key cache
 * (after the commit, so no replica can reload the key as live). Repeating is
 * fine and tells the caches again; another tenant's key, or none, is 404.
 */
export async function revokeApiKey(deps: Pick<GatewayDeps, 'db' | 'clock' | 'apiKeyRevoked'>, tenantId: string, id: string): Promise<void> {
  const row = await deps.db
    .selectFrom('api_keys')
    .select(['key_hash', 'revoked_at'])
    .where('id', '=', id)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw keyNotFound();
  if (row.revoked_at === null) {
    await deps.db.updateTable('api_keys').set({ revoked_at: deps.clock.now() }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  }
  await deps.apiKeyRevoked(row.key_hash);
}

const keyNotFound = () => new HttpProblem(404, 'api_key_not_found', 'No API key with this id belongs to this tenant.');

/**
 * Replaces a live key's limits (`null` or `{}`: none), then tells every
 * replica's key cache, as a revocation does: the cached principal carries
 * the limits, and the next request with the key, on any replica, is
 * checked against the new ones. Another tenant's key, or a revoked one, is 404.
 */
export function setApiKeyLimits(
  deps: Pick<GatewayDeps, 'db' | 'apiKeyRevoked'>,
  tenantId: string,
  id: string,
  limits: Limits | null,
): Promise<ApiKeyMetadata> {
  return updateApiKey(deps, tenantId, id, { limits });
}

/**
 * Renames a live key, with the rules of creation (trimmed, not empty, at
 * most KEY_NAME_MAX characters). The data plane's key cache holds no name,
 * so no replica needs telling. Another tenant's key, or a revoked one, is 404.
 */
export function renameApiKey(deps: Pick<GatewayDeps, 'db' | 'apiKeyRevoked'>, tenantId: string, id: string, name: string): Promise<ApiKeyMetadata> {
  return updateApiKey(deps, tenantId, id, { name });
}

/**
 * PATCH /api/v1/tenant/api-keys/{id}: a new name, new limits, or both, in
 * one statement (the name is checked before anything is written). Only a
 * change of limits tells the replicas' key caches (setApiKeyLimits).
 */
export async function updateApiKey(
  deps: Pick<GatewayDeps, 'db' | 'apiKeyRevoked'>,
  tenantId: string,
  id: string,
  changes: { name?: string | undefined; limits?: Limits | null | undefined },
): Promise<ApiKeyMetadata> {
  const set: Partial<Pick<ApiKeyRow, 'name' | 'limits'>> = {};
  if (changes.name !== undefined) set.name = requireKeyName(changes.name);
  if (changes.limits !== undefined) set.limits = JSON.stringify(changes.limits ?? {});
  if (Object.keys(set).length === 0) {
    // Both fields named, `limits` first: before renaming existed, a body without it was refused naming `limits`.
    const errors = [
      { field: 'limits', message: 'is required when name is not sent' },
      { field: 'name', message: 'is required when limits is not sent' },
    ];
    throw new HttpProblem(400, 'validation_failed', 'Send `name`, `limits`, or both.', { errors });
  }
  const row = await deps.db
    .updateTable('api_keys')
    .set(set)
    .where('id', '=', id)
    .where('tenant_id', '=', tenantId)
    .where('revoked_at', 'is', null)
    .returning([...METADATA_COLUMNS, 'key_hash'])
    .executeTakeFirst();
  if (!row) throw keyNotFound();
  if (set.limits !== undefined) await deps.apiKeyRevoked(row.key_hash);
  return toMetadata(row);
}
