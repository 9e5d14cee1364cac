import type { User } from '../schema.ts';
import { type PendingRequest, redirectTrusted, refuse } from './authorize.ts';
import type { OAuthClient, OAuthDeps } from './clients.ts';
import { consentCovers, consentMayBeRemembered } from './consents.ts';
import { consentRequired, loginRequired } from './errors.ts';
import { issueCode } from './pending-requests.ts';

export type Step = { kind: 'login' } | { kind: 'consent' } | { kind: 'redirect'; url: string };

/**
 * What comes next for a pending request, in this order:
 * 1. no signed-in user, or `prompt=login` (or `select_account`) not yet
 *    satisfied in this request: the sign-in page, or `login_required` for
 *    `prompt=none`;
 * 2. consent already given to this client at this redirect URI for every
 *    scope asked, `prompt=consent` absent, and consent may be remembered for
 *    it ({@link consentMayBeRemembered}): back to the client with a code;
 * 3. `prompt=none`: `consent_required`;
 * 4. otherwise the consent page.
 * Errors go to the client only when {@link redirectTrusted}; else they are
 * thrown as AuthorizePageError for our own page.
 */
export async function nextStep(deps: OAuthDeps, client: OAuthClient, request: PendingRequest, user: User | null): Promise<Step> {
  const prompt = new Set(request.prompt);
  const target = { redirectUri: request.redirectUri, state: request.state, trusted: redirectTrusted(client, user !== null) };
  const mustSignIn = prompt.has('login') || prompt.has('select_account');
  if (!user || (mustSignIn && !request.authenticated)) {
    if (prompt.has('none')) refuse(deps, target, loginRequired('The user is not signed in.'));
    return { kind: 'login' };
  }
  if (
    !prompt.has('consent') &&
    consentMayBeRemembered(client, request.redirectUri) &&
    (await consentCovers(deps, user.id, request))
  ) {
    return { kind: 'redirect', url: await issueCode(deps, user.id, request) };
  }
  if (prompt.has('none')) refuse(deps, target, consentRequired('The user has not granted these scopes to this application.'));
  return { kind: 'consent' };
}
