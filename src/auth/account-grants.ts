import type { Kysely } from 'kysely';
import { revokeUserFamilies } from './oauth/token-families.ts';
import type { AuthTables } from './schema.ts';

/**
 * Revokes every credential the account has handed out besides its sessions:
 * OAuth token families with their access and refresh tokens, unused
 * authorization codes, remembered consents and personal access tokens. Runs
 * in the caller's transaction.
 *
 * Used when a password reset takes over an account that was unverified: its
 * earlier holder never proved control of the address, so nothing issued to
 * them may outlive the owner's reset (pre-account hijacking, Sudhodanan and
 * Paverd, "Pre-hijacked accounts", USENIX Security 2022).
 */
export async function revokeAccountGrants(db: Kysely<AuthTables>, userId: string, now: number): Promise<void> {
  // Revocation lives on the family row, which every token lookup joins: one write revokes all its tokens.
  await revokeUserFamilies(db, userId, now);
  // An unused code would still be exchanged for tokens after the reset; a used one is kept
  // until the purge, so that its replay is still recognised.
  await db.deleteFrom('oauth_codes').where('user_id', '=', userId).where('used_at', 'is', null).execute();
  await db.deleteFrom('oauth_consents').where('user_id', '=', userId).execute();
  await db.deleteFrom('personal_access_tokens').where('user_id', '=', userId).execute();
}
