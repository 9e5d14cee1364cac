import { randomBytes } from 'node:crypto';
import { formatScope } from '../scopes.ts';
import { readClientFields } from './client-fields.ts';
import type { OAuthDeps } from './clients.ts';
import { invalidClientMetadata, invalidRedirectUri } from './errors.ts';
import type { ApplicationType } from './redirect-uris.ts';

export interface RegistrationResponse {
  client_id: string;
  client_id_issued_at: number;
  client_name?: string;
  client_uri?: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  application_type: ApplicationType;
  scope?: string;
}

/**
 * Dynamic client registration (RFC 7591) for public clients. Every client
 * registered here uses PKCE and no secret: a request for client_secret_post
 * or client_secret_basic is answered with token_endpoint_auth_method "none"
 * (RFC 7591 section 3.2.1 lets the server replace requested values), which
 * real agent clients accept where a refusal would break them.
 */
export async function registerClient(deps: OAuthDeps, body: unknown): Promise<RegistrationResponse> {
  const fields = readClientFields(body, invalidClientMetadata, invalidRedirectUri);
  const method = (body as Record<string, unknown>)['token_endpoint_auth_method'];
  if (method !== undefined && !['none', 'client_secret_post', 'client_secret_basic'].includes(method as string)) {
    throw invalidClientMetadata('token_endpoint_auth_method must be none (client_secret_post and client_secret_basic are answered with none).');
  }
  const scope = fields.scope ? formatScope(fields.scope) : null;
  const clientId = `svc_${randomBytes(16).toString('base64url')}`;
  const now = deps.clock.now();
  await deps.db
    .insertInto('oauth_clients')
    .values({
      client_id: clientId,
      client_name: fields.clientName,
      client_uri: fields.clientUri,
      logo_uri: null,
      redirect_uris: JSON.stringify(fields.redirectUris),
      application_type: fields.applicationType,
      scope,
      grant_types: JSON.stringify(fields.grantTypes),
      created_at: now,
      last_token_at: null,
    })
    .execute();
  return {
    client_id: clientId,
    client_id_issued_at: Math.floor(now / 1000),
    ...(fields.clientName !== null ? { client_name: fields.clientName } : {}),
    ...(fields.clientUri !== null ? { client_uri: fields.clientUri } : {}),
    redirect_uris: fields.redirectUris,
    grant_types: fields.grantTypes,
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    application_type: fields.applicationType,
    ...(scope !== null ? { scope } : {}),
  };
}
