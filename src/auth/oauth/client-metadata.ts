import type { Clock } from '../../platform/clock.ts';
import { fetchJsonDocument, type LookupFn, SafeFetchError } from '../../platform/safe-fetch.ts';
import { invalidClient } from './errors.ts';
import { type GrantType, readClientFields } from './client-fields.ts';
import type { ApplicationType } from './redirect-uris.ts';

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
  /** The document's grant_types (default both); the token endpoint refuses any other. */
  grantTypes: GrantType[];
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

/** Checks a fetched document against the URL it came from and our client rules. */
export function validateDocument(url: string, json: unknown, allowInsecure: boolean): MetadataClient {
  const fields = readClientFields(json, invalidClient);
  const doc = json as Record<string, unknown>;
  if (doc['client_id'] !== url) throw invalidClient("The client metadata document's client_id does not equal its URL.");
  if (!allowInsecure && !url.startsWith('https://')) throw invalidClient('A client metadata URL must be https.');
  if ('client_secret' in doc || 'client_secret_expires_at' in doc) {
    throw invalidClient('A client metadata document must not contain a client secret.');
  }
  const method = doc['token_endpoint_auth_method'];
  if (method !== undefined && method !== 'none') {
    throw invalidClient('Metadata-document clients must use token_endpoint_auth_method "none" (public clients with PKCE).');
  }
  return {
    clientId: url,
    clientName: fields.clientName,
    clientUri: fields.clientUri,
    redirectUris: fields.redirectUris,
    applicationType: fields.applicationType,
    grantTypes: fields.grantTypes,
    scope: fields.scope,
  };
}
