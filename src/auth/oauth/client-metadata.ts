import type { Clock } from '../../platform/clock.ts';
import { fetchJsonDocument, type LookupFn, SafeFetchError } from '../../platform/safe-fetch.ts';
import { parseScope, UnknownScopeError } from '../scopes.ts';
import { invalidClient } from './errors.ts';
import { type ApplicationType, redirectUriProblem } from './redirect-uris.ts';

/**
 * Clients identified by the URL of their metadata document (OAuth Client ID
 * Metadata Document, as the MCP authorization specification uses it): the
 * client_id is an https URL; the document there lists the client's name and
 * redirect URIs. Fetched through the SSRF-safe fetcher and cached within
 * bounds, honouring Cache-Control.
 */
export interface MetadataClient {
  clientId: string;
  clientName: string | null;
  clientUri: string | null;
  redirectUris: string[];
  applicationType: ApplicationType;
  scope: string[] | null;
}

const DEFAULT_TTL_S = 300;
const MAX_TTL_S = 86_400;
const CACHE_ENTRIES = 1000;

/** Is this client_id a metadata-document URL (rather than a registered id)? */
export function isMetadataClientId(clientId: string): boolean {
  return clientId.startsWith('https://') || clientId.startsWith('http://');
}

export class ClientMetadataResolver {
  readonly #cache = new Map<string, { client: MetadataClient; expiresAt: number }>();
  readonly #clock: Clock;
  readonly #allowInsecure: boolean;
  readonly #lookup: LookupFn | undefined;

  constructor(options: { clock: Clock; allowInsecure: boolean; lookup?: LookupFn }) {
    this.#clock = options.clock;
    this.#allowInsecure = options.allowInsecure;
    this.#lookup = options.lookup;
  }

  /** The client the document describes; throws invalid_client with the reason when it cannot be used. */
  async resolve(clientId: string): Promise<MetadataClient> {
    const now = this.#clock.now();
    const cached = this.#cache.get(clientId);
    if (cached && cached.expiresAt > now) return cached.client;
    this.#cache.delete(clientId);

    let fetched: Awaited<ReturnType<typeof fetchJsonDocument>>;
    try {
      fetched = await fetchJsonDocument(clientId, {
        allowInsecure: this.#allowInsecure,
        timeoutMs: 5000,
        maxBytes: 64 * 1024,
        ...(this.#lookup ? { lookup: this.#lookup } : {}),
      });
    } catch (err) {
      if (err instanceof SafeFetchError) {
        throw invalidClient(`The client metadata document could not be fetched (${err.code}): ${err.message}`);
      }
      throw err;
    }
    const client = validateDocument(clientId, fetched.json, this.#allowInsecure);
    const ttl = fetched.noStore ? 0 : Math.min(fetched.maxAgeSeconds ?? DEFAULT_TTL_S, MAX_TTL_S);
    if (ttl > 0) {
      if (this.#cache.size >= CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value as string);
      this.#cache.set(clientId, { client, expiresAt: now + ttl * 1000 });
    }
    return client;
  }
}

function optionalString(doc: Record<string, unknown>, name: string, max: number): string | null {
  const v = doc[name];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > max) throw invalidClient(`The client metadata field ${name} must be a string of at most ${max} characters.`);
  return v;
}

/** Checks a fetched document against the URL it came from and our client rules. */
export function validateDocument(url: string, json: unknown, allowInsecure: boolean): MetadataClient {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw invalidClient('The client metadata document is not a JSON object.');
  }
  const doc = json as Record<string, unknown>;
  if (doc['client_id'] !== url) throw invalidClient('The client metadata document\'s client_id does not equal its URL.');
  if (!allowInsecure && !url.startsWith('https://')) throw invalidClient('A client metadata URL must be https.');
  if ('client_secret' in doc || 'client_secret_expires_at' in doc) {
    throw invalidClient('A client metadata document must not contain a client secret.');
  }
  const method = doc['token_endpoint_auth_method'];
  if (method !== undefined && method !== 'none') {
    throw invalidClient('Metadata-document clients must use token_endpoint_auth_method "none" (public clients with PKCE).');
  }
  const appType = doc['application_type'] ?? 'web';
  if (appType !== 'web' && appType !== 'native') throw invalidClient('application_type must be "web" or "native".');
  const uris = doc['redirect_uris'];
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20 || !uris.every((u) => typeof u === 'string')) {
    throw invalidClient('The client metadata document must list 1 to 20 redirect_uris.');
  }
  for (const uri of uris as string[]) {
    const problem = redirectUriProblem(uri, appType);
    if (problem) throw invalidClient(`The redirect URI "${uri.slice(0, 200)}" ${problem}.`);
  }
  const grants = doc['grant_types'];
  if (grants !== undefined && (!Array.isArray(grants) || !grants.includes('authorization_code'))) {
    throw invalidClient('grant_types must include authorization_code.');
  }
  let scope: string[] | null = null;
  const rawScope = optionalString(doc, 'scope', 1000);
  if (rawScope !== null) {
    try {
      scope = parseScope(rawScope);
    } catch (err) {
      if (err instanceof UnknownScopeError) throw invalidClient(`The client metadata scope is invalid: ${err.message}`);
      throw err;
    }
  }
  return {
    clientId: url,
    clientName: optionalString(doc, 'client_name', 200),
    clientUri: optionalString(doc, 'client_uri', 2000),
    redirectUris: uris as string[],
    applicationType: appType,
    scope,
  };
}
