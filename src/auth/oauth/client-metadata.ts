import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.ts';
import type { RateLimiter } from '../../platform/limits.ts';
import { fetchJsonDocument, type LookupFn, SafeFetchError } from '../../platform/safe-fetch.ts';
import { invalidClient, OAuthError, slowDown } from './errors.ts';
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
/** Metadata fetches in flight at once, process-wide; beyond it a request fails at once rather than queueing. */
export const MAX_CONCURRENT_FETCHES = 8;

/**
 * The one answer for every failure to obtain or use a metadata document. A
 * message per cause (forbidden address, unknown name, closed port, refused
 * connection, timeout...) would let anyone map the service's network through
 * it (defect 8, OWASP SSRF Prevention Cheat Sheet: do not return the raw
 * outcome); the cause goes to the log instead.
 */
export const METADATA_UNUSABLE = "The client's metadata document could not be fetched or is not usable.";

/** Is this client_id a metadata-document URL (rather than a registered id)? */
export function isMetadataClientId(clientId: string): boolean {
  return clientId.startsWith('https://') || clientId.startsWith('http://');
}

export interface ClientMetadataResolverOptions {
  clock: Clock;
  allowInsecure: boolean;
  log: Logger;
  /** Per requesting IP, counted for fetches only (a cached document costs nothing): OAUTH_LIMIT_METADATA_FETCH. */
  limiter?: RateLimiter;
  maxConcurrent?: number;
  lookup?: LookupFn;
}

export class ClientMetadataResolver {
  readonly #cache = new Map<string, { client: MetadataClient; expiresAt: number }>();
  /** Fetches under way, by URL: concurrent requests for one client share one fetch. */
  readonly #inflight = new Map<string, Promise<MetadataClient>>();
  #active = 0;
  readonly #clock: Clock;
  readonly #allowInsecure: boolean;
  readonly #log: Logger;
  readonly #limiter: RateLimiter | undefined;
  readonly #maxConcurrent: number;
  readonly #lookup: LookupFn | undefined;

  constructor(options: ClientMetadataResolverOptions) {
    this.#clock = options.clock;
    this.#allowInsecure = options.allowInsecure;
    this.#log = options.log;
    this.#limiter = options.limiter;
    this.#maxConcurrent = options.maxConcurrent ?? MAX_CONCURRENT_FETCHES;
    this.#lookup = options.lookup;
  }

  /**
   * The client the document describes. Throws invalid_client with
   * {@link METADATA_UNUSABLE} when it cannot be fetched or used (the cause
   * logged), slow_down (429) past the requesting IP's bucket, and
   * temporarily_unavailable (503) when too many fetches are under way.
   * `ip` is the requesting client's address; without it only the
   * process-wide cap applies (the caller has its own per-IP bucket).
   */
  async resolve(clientId: string, options: { ip?: string | undefined } = {}): Promise<MetadataClient> {
    const now = this.#clock.now();
    const cached = this.#cache.get(clientId);
    if (cached && cached.expiresAt > now) return cached.client;
    this.#cache.delete(clientId);
    const running = this.#inflight.get(clientId);
    if (running) return running;

    if (this.#limiter && options.ip !== undefined) {
      const limit = await this.#limiter.consume(options.ip);
      if (!limit.allowed) {
        throw slowDown('Too many client metadata documents fetched for this address; try again later.', {
          'retry-after': String(Math.max(1, Math.ceil(limit.retryAfterMs / 1000))),
        });
      }
    }
    if (this.#active >= this.#maxConcurrent) {
      this.#log.warn({ active: this.#active }, 'client metadata fetch refused: too many under way');
      throw new OAuthError('temporarily_unavailable', 'Too many client metadata documents are being fetched; try again in a moment.', 503, {
        'retry-after': '1',
      });
    }
    this.#active++;
    const fetching = this.#fetch(clientId, now).finally(() => {
      this.#active--;
      this.#inflight.delete(clientId);
    });
    this.#inflight.set(clientId, fetching);
    return fetching;
  }

  async #fetch(clientId: string, now: number): Promise<MetadataClient> {
    let client: MetadataClient;
    let ttl: number;
    try {
      const fetched = await fetchJsonDocument(clientId, {
        allowInsecure: this.#allowInsecure,
        timeoutMs: 5000,
        maxBytes: 64 * 1024,
        ...(this.#lookup ? { lookup: this.#lookup } : {}),
      });
      client = validateDocument(clientId, fetched.json, this.#allowInsecure);
      ttl = fetched.noStore ? 0 : Math.min(fetched.maxAgeSeconds ?? DEFAULT_TTL_S, MAX_TTL_S);
    } catch (err) {
      if (err instanceof SafeFetchError) {
        // The host, never the whole URL (its path or query may carry something the client would not log).
        const level = err.code === 'forbidden_address' ? 'warn' : 'info';
        this.#log[level]({ clientMetadata: { code: err.code, host: hostOf(clientId), reason: err.message } }, 'client metadata document not fetched');
      } else if (err instanceof OAuthError) {
        this.#log.info({ clientMetadata: { code: 'invalid_document', host: hostOf(clientId), reason: err.message } }, 'client metadata document refused');
      } else {
        throw err;
      }
      throw invalidClient(METADATA_UNUSABLE);
    }
    if (ttl > 0) {
      if (this.#cache.size >= CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value as string);
      this.#cache.set(clientId, { client, expiresAt: now + ttl * 1000 });
    }
    return client;
  }
}

function hostOf(url: string): string {
  return URL.parse(url)?.host ?? '(not a URL)';
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
