import type { PendingRequest } from './authorize.ts';
import { findClient, type OAuthClient, type OAuthDeps } from './clients.ts';
import { OAuthError, param } from './errors.ts';
import type { SignInTarget } from './pages.ts';
import { loadPendingRequest } from './pending-requests.ts';
import { returnPath } from './return-paths.ts';

/** A pending request and its client, or null when either is gone (expired, completed, client removed). */
export async function pendingWithClient(
  deps: OAuthDeps,
  id: string | undefined,
): Promise<{ request: PendingRequest; client: OAuthClient } | null> {
  const request = await loadPendingRequest(deps, id);
  if (!request) return null;
  try {
    const client = await findClient(deps, request.clientId);
    return client ? { request, client } : null;
  } catch (err) {
    if (err instanceof OAuthError) return null;
    throw err;
  }
}

/**
 * What a sign-in (or sign-up) form is for: the pending authorization request
 * it names, or else the page of ours it names to return to (a closed list,
 * never a URL; only where those pages are served: OAUTH_PUBLIC_ENDPOINTS);
 * null when neither.
 */
export async function findSignInTarget(deps: OAuthDeps, source: unknown): Promise<SignInTarget | null> {
  const requestId = param(source, 'request');
  if (requestId !== undefined) {
    const found = await pendingWithClient(deps, requestId);
    return found ? { kind: 'authorize', ...found } : null;
  }
  const path = deps.oauth.publicEndpoints ? returnPath(param(source, 'return_to')) : null;
  return path ? { kind: 'return', path } : null;
}

/** The query string that carries a target from one page to the next (sign-in to sign-up and back). */
export function targetQuery(target: SignInTarget): string {
  return target.kind === 'authorize'
    ? `request=${encodeURIComponent(target.request.id)}`
    : `return_to=${encodeURIComponent(target.path)}`;
}
