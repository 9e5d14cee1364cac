import { randomUUID } from 'node:crypto';
import { randomToken, sha256 } from '../platform/crypto.ts';
import { HttpProblem } from '../platform/errors.ts';
import type { AuthDeps } from './deps.ts';
import type { AuthTables } from './schema.ts';
import { formatScope, requireScope } from './scopes.ts';

/**
 * Personal access tokens: a user mints them for their own agents. Table
 * `personal_access_tokens`; the token is `pat_` + 32 random bytes, shown
 * once; only its SHA-256 is stored. The prefix lets secret scanners find a
 * leaked one.
 */
export const PAT_PREFIX = 'pat_';
const DAY = 86_400_000;

export interface TokenMetadata {
  id: string;
  name: string;
  scope: string;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
}

type PatRow = AuthTables['personal_access_tokens'];

function toMetadata(row: Pick<PatRow, 'id' | 'name' | 'scope' | 'created_at' | 'expires_at' | 'last_used_at'>): TokenMetadata {
  return {
    id: row.id,
    name: row.name,
    scope: row.scope,
    created_at: new Date(row.created_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
    last_used_at: row.last_used_at === null ? null : new Date(row.last_used_at).toISOString(),
  };
}

/** Mints a token; at most `tokens.maxPerUser` live (unrevoked, unexpired) tokens per user. */
export async function createToken(
  deps: AuthDeps,
  userId: string,
  input: { name: string; scope?: string | undefined; expiresInDays?: number | undefined },
): Promise<TokenMetadata & { token: string }> {
  const name = input.name.trim();
  if (name === '') throw new HttpProblem(400, 'invalid_name', 'The token name must not be empty.', { errors: [{ field: 'name', message: 'is empty' }] });
  const scope = formatScope(requireScope(input.scope));
  const now = deps.clock.now();
  const token = randomToken(PAT_PREFIX);
  const row: PatRow = {
    id: randomUUID(),
    user_id: userId,
    name,
    scope,
    token_hash: sha256(token),
    created_at: now,
    expires_at: now + (input.expiresInDays ?? deps.config.tokens.defaultTtlDays) * DAY,
    last_used_at: null,
    revoked_at: null,
  };
  const max = deps.config.tokens.maxPerUser;
  await deps.db.transaction().execute(async (trx) => {
    // Serialise token creation per user so that concurrent requests cannot pass the limit together.
    let lock = trx.selectFrom('users').select('id').where('id', '=', userId);
    if (deps.dialect === 'postgres') lock = lock.forUpdate();
    await lock.execute();
    const live = await trx
      .selectFrom('personal_access_tokens')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirstOrThrow();
    if (Number(live.n) >= max) {
      throw new HttpProblem(409, 'token_limit_reached', `You already have ${max} live tokens; revoke one before creating another.`);
    }
    await trx.insertInto('personal_access_tokens').values(row).execute();
  });
  return { ...toMetadata(row), token };
}

/** The user's unrevoked tokens, newest first: metadata only, never a hash or a plaintext. */
export async function listTokens(deps: AuthDeps, userId: string): Promise<TokenMetadata[]> {
  const rows = await deps.db
    .selectFrom('personal_access_tokens')
    .select(['id', 'name', 'scope', 'created_at', 'expires_at', 'last_used_at'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
  return rows.map(toMetadata);
}

/** Revokes one of the user's tokens; repeating is fine; another user's (or no) token is 404. */
export async function revokeToken(deps: AuthDeps, userId: string, id: string): Promise<void> {
  const row = await deps.db
    .selectFrom('personal_access_tokens')
    .select(['id', 'revoked_at'])
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!row) throw new HttpProblem(404, 'token_not_found', 'No token with this id belongs to you.');
  if (row.revoked_at === null) {
    await deps.db.updateTable('personal_access_tokens').set({ revoked_at: deps.clock.now() }).where('id', '=', id).execute();
  }
}
