import { randomBytes } from 'node:crypto';
import { formatScope, parseScope, UnknownScopeError } from '../scopes.ts';
import type { OAuthDeps } from './clients.ts';
import { invalidClientMetadata, invalidRedirectUri } from './errors.ts';
import { type ApplicationType, redirectUriProblem } from './redirect-uris.ts';

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

function optionalString(body: Record<string, unknown>, name: string, max: number): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length > max) throw invalidClientMetadata(`${name} must be a string of at most ${max} characters.`);
  return v;
}

/**
 * Dynamic client registration (RFC 7591) for public clients. Every client
 * registered here uses PKCE and no secret: a request for client_secret_post
 * or client_secret_basic is answered with token_endpoint_auth_method "none"
 * (RFC 7591 section 3.2.1 lets the server replace requested values), which
 * real agent clients accept where a refusal would break them.
 */
export async function registerClient(deps: OAuthDeps, body: unknown): Promise<RegistrationResponse> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidClientMetadata('The body must be a JSON object.');
  const doc = body as Record<string, unknown>;

  const appType = doc['application_type'] ?? 'web';
  if (appType !== 'web' && appType !== 'native') throw invalidClientMetadata('application_type must be "web" or "native".');
  const uris = doc['redirect_uris'];
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20 || !uris.every((u) => typeof u === 'string')) {
    throw invalidRedirectUri('redirect_uris must be an array of 1 to 20 URIs.');
  }
  for (const uri of uris as string[]) {
    const problem = redirectUriProblem(uri, appType);
    if (problem) throw invalidRedirectUri(`The redirect URI "${uri.slice(0, 200)}" ${problem}.`);
  }
  const grantTypes = doc['grant_types'] ?? ['authorization_code', 'refresh_token'];
  if (!Array.isArray(grantTypes) || !grantTypes.every((g) => g === 'authorization_code' || g === 'refresh_token')) {
    throw invalidClientMetadata('grant_types may contain only authorization_code and refresh_token.');
  }
  const responseTypes = doc['response_types'] ?? ['code'];
  if (!Array.isArray(responseTypes) || !responseTypes.every((r) => r === 'code')) {
    throw invalidClientMetadata('response_types may contain only code.');
  }
  const method = doc['token_endpoint_auth_method'];
  if (method !== undefined && !['none', 'client_secret_post', 'client_secret_basic'].includes(method as string)) {
    throw invalidClientMetadata('token_endpoint_auth_method must be none (client_secret_post and client_secret_basic are answered with none).');
  }
  let scope: string | undefined;
  const rawScope = optionalString(doc, 'scope', 1000);
  if (rawScope !== undefined) {
    try {
      scope = formatScope(parseScope(rawScope));
    } catch (err) {
      if (err instanceof UnknownScopeError) throw invalidClientMetadata(err.message);
      throw err;
    }
  }
  const clientName = optionalString(doc, 'client_name', 200);
  const clientUri = optionalString(doc, 'client_uri', 2000);
  if (clientUri !== undefined && !/^https?:\/\//.test(clientUri)) throw invalidClientMetadata('client_uri must be an http(s) URL.');

  const clientId = `svc_${randomBytes(16).toString('base64url')}`;
  const now = deps.clock.now();
  await deps.db
    .insertInto('oauth_clients')
    .values({
      client_id: clientId,
      client_name: clientName ?? null,
      client_uri: clientUri ?? null,
      logo_uri: null,
      redirect_uris: JSON.stringify(uris),
      application_type: appType,
      scope: scope ?? null,
      created_at: now,
      last_token_at: null,
    })
    .execute();
  return {
    client_id: clientId,
    client_id_issued_at: Math.floor(now / 1000),
    ...(clientName !== undefined ? { client_name: clientName } : {}),
    ...(clientUri !== undefined ? { client_uri: clientUri } : {}),
    redirect_uris: uris as string[],
    grant_types: grantTypes as string[],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    application_type: appType,
    ...(scope !== undefined ? { scope } : {}),
  };
}

