import type { Kysely, Selectable } from 'kysely';
import { precompiled } from '../../platform/db.ts';
import type { RateLimiter } from '../../platform/limits.ts';
import type { AuthTables } from '../schema.ts';
import type { OAuthConfig } from '../config.ts';
import type { AuthDeps } from '../deps.ts';
import { type ClientMetadataResolver, isMetadataClientId } from './client-metadata.ts';
import type { GrantType } from './client-fields.ts';
import type { ApplicationType } from './redirect-uris.ts';

/** What the OAuth code is handed: the account service's deps plus the OAuth settings. */
export interface OAuthDeps extends AuthDeps {
  oauth: OAuthConfig;
  metadata: ClientMetadataResolver;
  registrationLimiter: RateLimiter;
  /** Per-IP bucket of /oauth/authorize: each request writes a pending row and may fetch a metadata document. */
  authorizeLimiter: RateLimiter;
  /** The issuer identifier (RFC 8414, RFC 9207): AUTH_BASE_URL. */
  issuer: string;
}

/**
 * A client as every OAuth check sees it, whichever of the three kinds it is:
 * the static confidential client from the environment, a dynamically
 * registered public client (`svc_…`), or a metadata-document client (its
 * client_id is an https URL).
 */
export interface OAuthClient {
  id: string;
  kind: 'static' | 'dynamic' | 'metadata';
  /** Name to show a person; falls back to the host. */
  name: string;
  /** Host to show beside the name: of client_uri, else of the first redirect URI. */
  host: string;
  /** For metadata-URL clients: the host of the metadata URL, the one identity they proved. */
  metadataHost: string | null;
  redirectUris: string[];
  applicationType: ApplicationType;
  /** Grant types the client registered (RFC 7591 section 2); the token endpoint refuses others. */
  grantTypes: GrantType[];
  confidential: boolean;
  /** Scopes the client may ask for; null: any registered scope. */
  allowedScopes: string[] | null;
}

// Parameter: client_id. Precompiled: every token request of a registered client looks its row up.
const registeredClientQuery = precompiled((db: Kysely<AuthTables>) =>
  db.selectFrom('oauth_clients').selectAll().where('client_id', '=', ''),
);

/** The host of a URI (or its scheme, for a private-use scheme), or null when it is not a URI. */
export function hostOf(uri: string | null | undefined): string | null {
  if (!uri) return null;
  try {
    const url = new URL(uri);
    return url.host || url.protocol.slice(0, -1);
  } catch {
    return null;
  }
}

/**
 * The client with this id, or null when there is none. A metadata-URL client
 * costs a fetch unless its document is cached; failures throw (see
 * ClientMetadataResolver.resolve). `ip`, the requesting client's address,
 * counts the fetch in its OAUTH_LIMIT_METADATA_FETCH bucket.
 */
export async function findClient(deps: OAuthDeps, clientId: string, options: { ip?: string } = {}): Promise<OAuthClient | null> {
  if (clientId === deps.oauth.clientId) return staticClient(deps.oauth);
  if (isMetadataClientId(clientId)) {
    const doc = await deps.metadata.resolve(clientId, options);
    const host = hostOf(doc.clientUri) ?? hostOf(doc.redirectUris[0]) ?? 'unknown';
    return {
      id: clientId,
      kind: 'metadata',
      name: doc.clientName ?? host,
      host,
      metadataHost: hostOf(clientId),
      redirectUris: doc.redirectUris,
      applicationType: doc.applicationType,
      grantTypes: doc.grantTypes,
      confidential: false,
      allowedScopes: doc.scope,
    };
  }
  if (!clientId.startsWith('svc_') || clientId.length > 64) return null;
  const row = await registeredClientQuery(deps.db, [clientId]);
  return row ? registeredClient(row) : null;
}

/** The static confidential client of the environment (OAUTH_CLIENT_ID): named after its first redirect URI's host. */
export function staticClient(oauth: Pick<OAuthConfig, 'clientId' | 'redirectUris'>): OAuthClient {
  const host = hostOf(oauth.redirectUris[0]) ?? 'unknown';
  return {
    id: oauth.clientId,
    kind: 'static',
    name: host,
    host,
    metadataHost: null,
    redirectUris: oauth.redirectUris,
    applicationType: 'web',
    grantTypes: ['authorization_code', 'refresh_token'],
    confidential: true,
    allowedScopes: null,
  };
}

/** The columns of a registered client's row that its OAuthClient is made of. */
export type RegisteredClientRow = Pick<
  Selectable<AuthTables['oauth_clients']>,
  'client_id' | 'client_name' | 'client_uri' | 'redirect_uris' | 'application_type' | 'scope' | 'grant_types'
>;

/** A dynamically registered client from its row (read by findClient, or joined to a refresh token's lookup). */
export function registeredClient(row: RegisteredClientRow): OAuthClient {
  const redirectUris = JSON.parse(row.redirect_uris) as string[];
  const host = hostOf(row.client_uri) ?? hostOf(redirectUris[0]) ?? 'unknown';
  return {
    id: row.client_id,
    kind: 'dynamic',
    name: row.client_name ?? host,
    host,
    metadataHost: null,
    redirectUris,
    applicationType: row.application_type as ApplicationType,
    grantTypes: JSON.parse(row.grant_types) as GrantType[],
    confidential: false,
    allowedScopes: row.scope ? row.scope.split(' ') : null,
  };
}
