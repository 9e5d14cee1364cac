import { formatScope, parseScope, scopesCovered } from '../scopes.ts';
import type { PendingRequest } from './authorize.ts';
import type { OAuthClient, OAuthDeps } from './clients.ts';

/**
 * Remembered consent (table `oauth_consents`): what a user granted a client,
 * per redirect URI, as the union of the scopes granted so far. Tied to the
 * redirect URI because a code goes wherever the request says: consent given
 * to one of a client's URIs says nothing of another (a metadata document or
 * a registration can list several, and a document can change).
 */

/**
 * May remembered consent skip the page for this request? Not for a public
 * client redirecting to a loopback address or a private-use scheme: any
 * program on the user's machine can listen on a loopback port or claim a
 * scheme, and with its own PKCE pair and `prompt=none` it would receive a
 * code for an app the user approved once (RFC 8252 section 8.6). Such
 * requests always show the page. Confidential clients (a secret is needed to
 * use the code) and https redirects (a host the client controls) may skip it.
 */
export function consentMayBeRemembered(client: Pick<OAuthClient, 'confidential'>, redirectUri: string): boolean {
  return client.confidential || redirectUri.startsWith('https://');
}

async function grantedScopes(deps: OAuthDeps, userId: string, request: PendingRequest): Promise<string[]> {
  const row = await deps.db
    .selectFrom('oauth_consents')
    .select('scope')
    .where('user_id', '=', userId)
    .where('client_id', '=', request.clientId)
    .where('redirect_uri', '=', request.redirectUri)
    .executeTakeFirst();
  return row ? row.scope.split(' ') : [];
}

/** Has the user already granted this client, at this redirect URI, every scope asked for? */
export async function consentCovers(deps: OAuthDeps, userId: string, request: PendingRequest): Promise<boolean> {
  return scopesCovered(await grantedScopes(deps, userId, request), request.scope);
}

/**
 * Remembers consent: the union of what was granted before and now, for this
 * client and redirect URI, with the client's name as the page showed it (the
 * user's list of grants shows it without fetching a metadata document).
 */
export async function rememberConsent(deps: OAuthDeps, userId: string, request: PendingRequest, client: Pick<OAuthClient, 'name'>): Promise<void> {
  const now = deps.clock.now();
  const before = await grantedScopes(deps, userId, request);
  const scope = formatScope(parseScope([...before, ...request.scope].join(' ')));
  const client_name = client.name;
  await deps.db
    .insertInto('oauth_consents')
    .values({ user_id: userId, client_id: request.clientId, redirect_uri: request.redirectUri, scope, created_at: now, updated_at: now, client_name })
    .onConflict((oc) => oc.columns(['user_id', 'client_id', 'redirect_uri']).doUpdateSet({ scope, updated_at: now, client_name }))
    .execute();
}
