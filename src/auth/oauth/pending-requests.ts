import { randomUUID } from 'node:crypto';
import { randomToken, sha256 } from '../../platform/crypto.ts';
import { formatScope } from '../scopes.ts';
import { AuthorizePageError, type PendingRequest, type Prompt, redirectWith } from './authorize.ts';
import type { OAuthDeps } from './clients.ts';

/**
 * Pending authorization requests (table `oauth_requests`): what passed the
 * checks of /oauth/authorize, kept server-side for the code's lifetime while
 * the user signs in and consents, so the pages carry only an opaque id. Every
 * stored field is bounded by those checks; expired rows are purged within a
 * minute (src/auth/purge.ts, the `auth:purge-requests` job).
 */
export const CODE_PREFIX = 'oac_';

export async function savePendingRequest(deps: OAuthDeps, request: PendingRequest): Promise<void> {
  const now = deps.clock.now();
  await deps.db
    .insertInto('oauth_requests')
    .values({
      id: request.id,
      client_id: request.clientId,
      params: JSON.stringify(request),
      created_at: now,
      expires_at: now + deps.oauth.codeTtlMs,
    })
    .execute();
}

export async function loadPendingRequest(deps: OAuthDeps, id: string | undefined): Promise<PendingRequest | null> {
  if (!id || id.length > 64) return null;
  const row = await deps.db
    .selectFrom('oauth_requests')
    .select('params')
    .where('id', '=', id)
    .where('expires_at', '>', deps.clock.now())
    .executeTakeFirst();
  if (!row) return null;
  const request = JSON.parse(row.params) as Omit<PendingRequest, 'prompt'> & { prompt?: string | Prompt[] };
  // Rows written before prompt became a list held it as one string.
  const prompt = typeof request.prompt === 'string' ? (request.prompt.split(' ') as Prompt[]) : (request.prompt ?? []);
  return { ...request, prompt };
}

export async function markAuthenticated(deps: OAuthDeps, request: PendingRequest): Promise<void> {
  request.authenticated = true;
  await deps.db.updateTable('oauth_requests').set({ params: JSON.stringify(request) }).where('id', '=', request.id).execute();
}

/** Ends a request without a code (the user denied it). */
export async function discardPendingRequest(deps: OAuthDeps, request: PendingRequest): Promise<void> {
  await deps.db.deleteFrom('oauth_requests').where('id', '=', request.id).execute();
}

/** Issues the code (single use, 10 minutes), ends the pending request and returns the client redirect. */
export async function issueCode(deps: OAuthDeps, userId: string, request: PendingRequest): Promise<string> {
  const code = randomToken(CODE_PREFIX);
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const removed = await trx.deleteFrom('oauth_requests').where('id', '=', request.id).executeTakeFirst();
    if (Number(removed.numDeletedRows) !== 1) throw new AuthorizePageError('This sign-in request was already completed.');
    await trx
      .insertInto('oauth_codes')
      .values({
        id: randomUUID(),
        code_hash: sha256(code),
        client_id: request.clientId,
        user_id: userId,
        redirect_uri: request.redirectUri,
        scope: formatScope(request.scope),
        resource: request.resource,
        code_challenge: request.codeChallenge,
        created_at: now,
        expires_at: now + deps.oauth.codeTtlMs,
        used_at: null,
        family_id: null,
      })
      .execute();
  });
  return redirectWith(request.redirectUri, { code, state: request.state, iss: deps.issuer });
}
