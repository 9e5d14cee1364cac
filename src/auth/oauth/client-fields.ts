import { parseScopeOr } from '../scopes.ts';
import type { OAuthError } from './errors.ts';
import { type ApplicationType, MAX_REDIRECT_URI_LENGTH, redirectUriProblem } from './redirect-uris.ts';

/**
 * Bounds on client metadata (defect 6: a registration is stored for days, so
 * what it may carry is bounded; real clients stay far below these).
 * Unknown fields are ignored and not stored, but count towards the size.
 */
export const CLIENT_LIMITS = {
  /** The whole metadata as compact JSON, in characters. */
  metadata: 16 * 1024,
  redirectUris: 10,
  redirectUri: MAX_REDIRECT_URI_LENGTH,
  clientName: 100,
  clientUri: 512,
  scope: 256,
} as const;

export type GrantType = 'authorization_code' | 'refresh_token';
const GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token'];

/** The client metadata fields (RFC 7591 section 2) that registration and metadata documents share. */
export interface ClientFields {
  applicationType: ApplicationType;
  redirectUris: string[];
  /** Registered grant types, each once: authorization_code, optionally refresh_token. */
  grantTypes: GrantType[];
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
 * Every array's length is checked before its elements are walked.
 */
export function readClientFields(body: unknown, fail: Fail, failRedirect: Fail = fail): ClientFields {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw fail('The client metadata must be a JSON object.');
  if (jsonLengthExceeds(body, CLIENT_LIMITS.metadata)) {
    throw fail(`The client metadata must be at most ${CLIENT_LIMITS.metadata} characters of JSON.`);
  }
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
  const most = CLIENT_LIMITS.redirectUris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > most || !uris.every((u) => typeof u === 'string')) {
    throw failRedirect(`redirect_uris must be an array of 1 to ${most} URIs.`);
  }
  for (const uri of uris as string[]) {
    const problem = redirectUriProblem(uri, applicationType);
    if (problem) throw failRedirect(`The redirect URI "${uri.slice(0, 200)}" ${problem}.`);
  }
  const grantTypes = doc['grant_types'] ?? GRANT_TYPES;
  if (
    !Array.isArray(grantTypes) ||
    !grantTypes.every((g) => GRANT_TYPES.includes(g)) ||
    !grantTypes.includes('authorization_code')
  ) {
    throw fail('grant_types must include authorization_code and may add only refresh_token.');
  }
  const responseTypes = doc['response_types'] ?? ['code'];
  if (!Array.isArray(responseTypes) || !responseTypes.every((r) => r === 'code')) throw fail('response_types may contain only code.');

  const rawScope = optionalString('scope', CLIENT_LIMITS.scope);
  const scope = rawScope === null ? null : parseScopeOr(rawScope, fail);
  const clientUri = optionalString('client_uri', CLIENT_LIMITS.clientUri);
  if (clientUri !== null && !/^https?:\/\//.test(clientUri)) throw fail('client_uri must be an http(s) URL.');
  return {
    applicationType,
    redirectUris: [...new Set(uris as string[])],
    grantTypes: GRANT_TYPES.filter((g) => grantTypes.includes(g)),
    scope,
    clientName: optionalString('client_name', CLIENT_LIMITS.clientName),
    clientUri,
  };
}

/**
 * Is `value`'s compact JSON longer than `limit` characters? Walked with an
 * explicit stack and stopped as soon as the limit is passed, so it costs at
 * most O(limit) whatever the value: JSON.stringify recurses, and a deeply
 * nested body (which JSON.parse accepts) would overflow the call stack.
 * String lengths are counted before escaping, so this slightly undercounts.
 */
export function jsonLengthExceeds(value: unknown, limit: number): boolean {
  let length = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') length += v.length + 2;
    else if (Array.isArray(v)) {
      length += 2 + Math.max(0, v.length - 1);
      if (length <= limit) for (const item of v) stack.push(item);
    } else if (typeof v === 'object' && v !== null) {
      const entries = Object.entries(v);
      length += 2 + Math.max(0, entries.length - 1);
      for (const [key, item] of entries) {
        if (length > limit) break;
        length += key.length + 3;
        stack.push(item);
      }
    } else length += String(v).length;
    if (length > limit) return true;
  }
  return false;
}
