import type { Kysely } from 'kysely';
import type { OAuthConfig } from '../config.ts';
import type { AuthTables } from '../schema.ts';

/**
 * Ends the user's sign-ins to the service's own products: the grants of the
 * configured static client (OAUTH_CLIENT_ID, the first-party client, e.g. the
 * gateway's console), in the caller's transaction. A product's sign-in
 * through it is a session of the account, so a password reset, which ends
 * every session, ends these too (ASVS 4.0.3 V3.3.3: effective at relying
 * parties); the product learns it when it next refreshes the grant
 * (src/gateway/control-plane/accounts-session-grants.ts). Third-party grants of a verified
 * account are left alone, as a reset leaves personal access tokens
 * (docs/security.md). Unused codes of the client go first, as in
 * revokeUserGrant (user-grants.ts): a code exchange in flight then cannot
 * leave a family behind. The remembered consent stays (the owner gave it).
 */
export async function revokeFirstPartyGrants(db: Kysely<AuthTables>, oauth: OAuthConfig | undefined, userId: string, now: number): Promise<void> {
  if (!oauth) return;
  await db.deleteFrom('oauth_codes').where('user_id', '=', userId).where('client_id', '=', oauth.clientId).where('used_at', 'is', null).execute();
  await db
    .updateTable('oauth_families')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('client_id', '=', oauth.clientId)
    .where('revoked_at', 'is', null)
    .execute();
}
