import { parseScopeOr } from '../scopes.ts';
import type { OAuthError } from './errors.ts';
import { type ApplicationType, redirectUriProblem } from './redirect-uris.ts';

/** The client metadata fields (RFC 7591 section 2) that registration and metadata documents share. */
export interface ClientFields {
  applicationType: ApplicationType;
  redirectUris: string[];
  grantTypes: string[];
  /** Scopes the client may ask for; null: any registered scope. */
  scope: string[] | null;
  clientName: string | null;
  clientUri: string | null;
}

type Fail = (description: string) => OAuthError;

/**
 * Reads and checks the shared client metadata fields, with the same redirect
 * URI rules as the authorization endpoint. `fail` makes the error of the
 * caller's protocol (invalid_client_metadata for registration, invalid_client
 * for a metadata document); `failRedirect` the one for redirect URIs.
 */
export function readClientFields(body: unknown, fail: Fail, failRedirect: Fail = fail): ClientFields {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw fail('The client metadata must be a JSON object.');
  const doc = body as Record<string, unknown>;
  const optionalString = (name: string, max: number): string | null => {
    const v = doc[name];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string' || v.length > max) throw fail(`${name} must be a string of at most ${max} characters.`);
    return v;
  };

  const applicationType = doc['application_type'] ?? 'web';
  if (applicationType !== 'web' && applicationType !== 'native') throw fail('application_type must be "web" or "native".');
  const uris = doc['redirect_uris'];
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20 || !uris.every((u) => typeof u === 'string')) {
    throw failRedirect('redirect_uris must be an array of 1 to 20 URIs.');
  }
  for (const uri of uris as string[]) {
    const problem = redirectUriProblem(uri, applicationType);
    if (problem) throw failRedirect(`The redirect URI "${uri.slice(0, 200)}" ${problem}.`);
  }
  const grantTypes = doc['grant_types'] ?? ['authorization_code', 'refresh_token'];
  if (
    !Array.isArray(grantTypes) ||
    !grantTypes.includes('authorization_code') ||
    !grantTypes.every((g) => g === 'authorization_code' || g === 'refresh_token')
  ) {
    throw fail('grant_types must include authorization_code and may add only refresh_token.');
  }
  const responseTypes = doc['response_types'] ?? ['code'];
  if (!Array.isArray(responseTypes) || !responseTypes.every((r) => r === 'code')) throw fail('response_types may contain only code.');

  const rawScope = optionalString('scope', 1000);
  const scope = rawScope === null ? null : parseScopeOr(rawScope, fail);
  const clientUri = optionalString('client_uri', 2000);
  if (clientUri !== null && !/^https?:\/\//.test(clientUri)) throw fail('client_uri must be an http(s) URL.');
  return {
    applicationType,
    redirectUris: uris as string[],
    grantTypes: grantTypes as string[],
    scope,
    clientName: optionalString('client_name', 200),
    clientUri,
  };
}
