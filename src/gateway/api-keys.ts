import { randomUUID } from 'node:crypto';
import { randomToken, sha256 } from '../platform/crypto.ts';
import { fieldProblem, HttpProblem } from '../platform/errors.ts';
import type { GatewayDeps } from './deps.ts';
import type { GatewayDb, GatewayTables } from './schema.ts';
import { type Limits, parseLimits } from './settings/limits.ts';

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

export function createApiKey(
  deps: Pick<GatewayDeps, 'db' | 'clock'>,
  tenantId: string,
  name: string,
  limits?: Limits,
): Promise<ApiKeyMetadata & { key: string }> {
  return insertApiKey(deps.db, deps.clock.now(), tenantId, requireKeyName(name), limits);
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
