import type { FastifyRequest } from 'fastify';
import { safeEqual } from '../../platform/crypto.ts';
import { findClient, type OAuthClient, type OAuthDeps } from './clients.ts';
import { invalidClient, invalidRequest, param } from './errors.ts';

/** Credentials from HTTP Basic (RFC 6749 section 2.3.1: each part form-urlencoded before base64). */
function basicCredentials(request: FastifyRequest): { id: string; secret: string } | null {
  const header = request.headers.authorization;
  if (!header?.toLowerCase().startsWith('basic ')) return null;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalidClient('Malformed Basic credentials.', { 'www-authenticate': 'Basic realm="oauth"' });
  try {
    const unform = (s: string) => decodeURIComponent(s.replaceAll('+', ' '));
    return { id: unform(decoded.slice(0, colon)), secret: unform(decoded.slice(colon + 1)) };
  } catch {
    throw invalidClient('Malformed Basic credentials.', { 'www-authenticate': 'Basic realm="oauth"' });
  }
}

/** The client's claimed identity and secret, read without looking the client up (nothing fetched yet). */
export interface ClientCredentials {
  id: string;
  secret: string | undefined;
  /** The WWW-Authenticate challenge of a failure, when Basic was used (RFC 6749 section 5.2). */
  challenge: Record<string, string> | undefined;
}

/** Reads client_secret_basic or the body's client_id / client_secret; one method, not two. */
export function readClientCredentials(request: FastifyRequest, body: unknown): ClientCredentials {
  const basic = basicCredentials(request);
  const bodyId = param(body, 'client_id');
  const bodySecret = param(body, 'client_secret');
  if (basic && bodySecret !== undefined) throw invalidRequest('Use one client authentication method, not two.');
  if (basic && bodyId !== undefined && bodyId !== basic.id) throw invalidRequest('client_id does not match the Basic credentials.');
  const id = basic?.id ?? bodyId;
  const challenge = basic ? { 'www-authenticate': 'Basic realm="oauth"' } : undefined;
  if (!id) throw invalidClient('Client authentication is required (client_id).', challenge);
  return { id, secret: basic?.secret ?? bodySecret, challenge };
}

/**
 * Authenticates the client of a token, revocation or introspection request:
 * the static client with client_secret_basic or client_secret_post; public
 * clients (dynamic, metadata-URL) by client_id alone (method none), which is
 * why their codes are bound to a PKCE verifier. `requireConfidential` is for
 * introspection, and is decided on the client_id before any lookup, so that
 * no other client can make the service fetch a metadata document there.
 * `ip` counts a metadata document fetch in the requester's bucket.
 */
export async function authenticateClient(
  deps: OAuthDeps,
  credentials: ClientCredentials,
  options: { requireConfidential?: boolean; ip?: string } = {},
): Promise<OAuthClient> {
  const { id, challenge } = credentials;
  if (options.requireConfidential && id !== deps.oauth.clientId) {
    throw invalidClient('Only the confidential client may use this endpoint.', challenge);
  }
  const client = await findClient(deps, id, options.ip === undefined ? {} : { ip: options.ip });
  if (!client) throw invalidClient('Unknown client.', challenge);
  return checkClientSecret(deps, client, credentials);
}

/**
 * The secret check of {@link authenticateClient}, for a caller that already
 * holds the client these credentials name (the refresh grant reads the
 * client's row with the token): the static client's secret must match; a
 * public client must send none.
 */
export function checkClientSecret(deps: OAuthDeps, client: OAuthClient, credentials: ClientCredentials): OAuthClient {
  const { secret, challenge } = credentials;
  if (client.confidential) {
    if (secret === undefined || !safeEqual(secret, deps.oauth.clientSecret)) {
      throw invalidClient('Client authentication failed.', challenge);
    }
  } else if (secret !== undefined) {
    throw invalidClient('This client is public and has no secret.', challenge);
  }
  return client;
}
