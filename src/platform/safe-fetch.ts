import { Resolver } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, request } from 'undici';

/**
 * Fetches a small JSON document from a URL an untrusted party chose (an OAuth
 * client ID metadata document: the client_id is the URL), guarding against
 * server-side request forgery (OWASP SSRF Prevention Cheat Sheet): https only,
 * every resolved address must be public, the connection is pinned to the checked
 * addresses (no DNS rebinding), no redirects, and time and size are bounded.
 */

/** Resolves a host name to all its addresses; gives up when `signal` fires. The DNS boundary; tests inject their own. */
export type LookupFn = (hostname: string, signal?: AbortSignal) => Promise<string[]>;

export interface SafeFetchOptions {
  /** Allows http: and private/loopback addresses (tests, local development). Every other rule still applies. */
  allowInsecure: boolean;
  /** Bounds the whole fetch: DNS, connect, headers and body. Default 5000. */
  timeoutMs?: number;
  /** Largest body accepted, in bytes. Default 64 KiB. */
  maxBytes?: number;
  lookup?: LookupFn;
}

export interface SafeFetchResult {
  json: unknown;
  /** From Cache-Control max-age (RFC 9111 §5.2.2.1), when the server sent one. */
  maxAgeSeconds: number | undefined;
  /** Cache-Control no-store or no-cache: the caller must not reuse the document. */
  noStore: boolean;
}

export type SafeFetchErrorCode =
  | 'invalid_url' | 'insecure_scheme' | 'userinfo_not_allowed' | 'fragment_not_allowed'
  | 'forbidden_address' | 'dns_failed' | 'connection_failed' | 'timeout'
  | 'redirect_not_allowed' | 'http_status' | 'too_large' | 'not_json' | 'invalid_json';

/** Why a fetch was refused or failed. Messages never contain the URL (its query may hold secrets). */
export class SafeFetchError extends Error {
  readonly code: SafeFetchErrorCode;

  constructor(code: SafeFetchErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'SafeFetchError';
    this.code = code;
  }
}

/** IPv4 special-purpose ranges (IANA IPv4 Special-Purpose Address Registry, RFC 6890) plus multicast. */
const V4_SPECIAL: [string, number][] = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16],
  ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
];
const v4Special = new BlockList();
for (const [net, prefix] of V4_SPECIAL) v4Special.addSubnet(net, prefix, 'ipv4');
v4Special.addAddress('255.255.255.255', 'ipv4');

/**
 * Only 2000::/3 is global unicast (RFC 4291 §2.4), which leaves out ::, ::1, 100::/64,
 * fc00::/7, fe80::/10 and ff00::/8 at once. Inside it: IETF protocol assignments
 * incl. Teredo (2001::/23), documentation (2001:db8::/32, 3fff::/20) and 6to4
 * (2002::/16, deprecated by RFC 7526, refused rather than decoded).
 */
const v6Global = new BlockList();
v6Global.addSubnet('2000::', 3, 'ipv6');
const v6Special = new BlockList();
for (const [net, prefix] of [['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['3fff::', 20]] as const) {
  v6Special.addSubnet(net, prefix, 'ipv6');
}
/** IPv4-mapped (RFC 4291 §2.5.5.2) and NAT64 (RFC 6052): judged by the IPv4 address they carry. */
const v6EmbedsV4 = new BlockList();
v6EmbedsV4.addSubnet('::ffff:0:0', 96, 'ipv6');
v6EmbedsV4.addSubnet('64:ff9b::', 96, 'ipv6');

/** The low 32 bits of an IPv6 address as dotted IPv4. The WHATWG URL parser canonicalises (hex groups, `::`). */
function lowIPv4(ip: string): string {
  const groups = new URL(`http://[${ip}]/`).hostname.slice(1, -1).split(':');
  const hi = Number.parseInt(groups.at(-2) || '0', 16);
  const lo = Number.parseInt(groups.at(-1) || '0', 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** True only for a globally routable unicast address; anything else (including non-addresses and zone IDs) is false. */
export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return !v4Special.check(ip, 'ipv4');
  if (family !== 6 || ip.includes('%')) return false;
  if (v6EmbedsV4.check(ip, 'ipv6')) return isPublicAddress(lowIPv4(ip));
  return v6Global.check(ip, 'ipv6') && !v6Special.check(ip, 'ipv6');
}

/**
 * A LookupFn that asks DNS through c-ares (dns.promises.Resolver: A and AAAA
 * queries), never getaddrinfo: dns.lookup runs getaddrinfo on libuv's thread
 * pool, four threads shared with bcrypt and the file system, so a slow or
 * hostile name server could stall logins. Unlike getaddrinfo it reads no
 * /etc/hosts, with two exceptions from RFC 6761: `localhost` names are
 * loopback (section 6.3) and `.invalid` names fail at once (section 6.4).
 * `servers` (host or host:port) overrides /etc/resolv.conf's name servers.
 */
export function dnsResolverLookup(options: { servers?: string[]; timeoutMs?: number } = {}): LookupFn {
  return async (hostname, signal) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return ['127.0.0.1', '::1'];
    if (name === 'invalid' || name.endsWith('.invalid')) throw Object.assign(new Error(`${name} does not exist`), { code: 'ENOTFOUND' });
    // One resolver per lookup, so that a timeout can cancel exactly its own queries.
    const resolver = new Resolver({ timeout: options.timeoutMs ?? 2000, tries: 2 });
    if (options.servers) resolver.setServers(options.servers);
    const cancel = () => resolver.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
      const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
      if (addresses.length === 0 && v4.status === 'rejected') throw v4.reason;
      return addresses;
    } finally {
      signal?.removeEventListener('abort', cancel);
    }
  };
}

/** The URL rules of draft-ietf-oauth-client-id-metadata-document §3: https, no userinfo, no fragment. */
function parseTarget(url: string, allowInsecure: boolean): URL {
  const target = URL.parse(url);
  if (!target) throw new SafeFetchError('invalid_url', 'the URL is not valid');
  if (target.protocol === 'http:' && !allowInsecure) throw new SafeFetchError('insecure_scheme', 'the URL must use https');
  if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new SafeFetchError('invalid_url', 'the URL must use https');
  if (target.username || target.password) throw new SafeFetchError('userinfo_not_allowed', 'the URL must not contain a user name or password');
  if (target.href.includes('#')) throw new SafeFetchError('fragment_not_allowed', 'the URL must not contain a fragment');
  return target;
}

/** Rejects when the signal fires, so a hung resolver cannot outlast the timeout. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
}

async function resolve(hostname: string, lookup: LookupFn, signal: AbortSignal): Promise<string[]> {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare)) return [bare];
  let addresses: string[];
  try {
    addresses = await Promise.race([lookup(bare, signal), aborted(signal)]);
  } catch (cause) {
    if (signal.aborted) throw new SafeFetchError('timeout', 'the host name did not resolve in time', { cause });
    throw new SafeFetchError('dns_failed', 'the host name could not be resolved', { cause });
  }
  if (addresses.length === 0 || !addresses.every((a) => isIP(a))) throw new SafeFetchError('dns_failed', 'the host name has no usable address');
  return addresses;
}

/**
 * An Agent whose sockets can only reach the checked addresses: net.connect asks
 * this lookup instead of DNS (it is not asked at all for IP literals). The URL
 * keeps its host name, so the Host header, TLS SNI and certificate check use it.
 * Node's happy eyeballs (autoSelectFamily) asks with `all: true`.
 */
function pinnedAgent(addresses: string[], timeoutMs: number): Agent {
  const pinned = addresses.map((address) => ({ address, family: isIP(address) }));
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, pinned);
    else callback(null, pinned[0]!.address, pinned[0]!.family);
  };
  return new Agent({ connect: { lookup, timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

const header = (value: string | string[] | undefined): string => (Array.isArray(value) ? value.join(',') : (value ?? ''));

/** application/json or a structured-syntax +json type (RFC 6839 §3.1), parameters allowed. */
function isJsonType(contentType: string): boolean {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9!#$&^_.+-]+\+json$/.test(type);
}

/** max-age (the smallest, if repeated), and no-store/no-cache as "do not reuse" (RFC 9111 §5.2.2). */
function cachePolicy(cacheControl: string): Pick<SafeFetchResult, 'maxAgeSeconds' | 'noStore'> {
  let maxAgeSeconds: number | undefined;
  let noStore = false;
  for (const directive of cacheControl.split(',')) {
    const [name = '', value = ''] = directive.split('=').map((s) => s.trim());
    const key = name.toLowerCase();
    if (key === 'no-store' || key === 'no-cache') noStore = true;
    const digits = value.replace(/^"(.*)"$/, '$1');
    if (key === 'max-age' && /^\d+$/.test(digits)) maxAgeSeconds = Math.min(maxAgeSeconds ?? Infinity, Number(digits));
  }
  return { maxAgeSeconds, noStore };
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Fetches and parses one JSON document under the rules above; throws SafeFetchError on any refusal or failure. */
export async function fetchJsonDocument(url: string, options: SafeFetchOptions): Promise<SafeFetchResult> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxBytes = options.maxBytes ?? 64 * 1024;
  const target = parseTarget(url, options.allowInsecure);
  const signal = AbortSignal.timeout(timeoutMs);
  const addresses = await resolve(target.hostname, options.lookup ?? dnsResolverLookup(), signal);
  if (!options.allowInsecure && !addresses.every(isPublicAddress)) {
    throw new SafeFetchError('forbidden_address', 'the host resolves to a non-public address');
  }
  const agent = pinnedAgent(addresses, timeoutMs);
  try {
    const { statusCode, headers, body } = await request(target, {
      dispatcher: agent,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      headers: { accept: 'application/json', 'user-agent': 'accounts-oauth-metadata-fetcher' },
    });
    if (statusCode >= 300 && statusCode < 400) throw new SafeFetchError('redirect_not_allowed', 'the server answered with a redirect');
    if (statusCode < 200 || statusCode >= 300) throw new SafeFetchError('http_status', `the server answered HTTP ${statusCode}`);
    if (!isJsonType(header(headers['content-type']))) throw new SafeFetchError('not_json', 'the answer is not application/json');
    const tooLarge = () => new SafeFetchError('too_large', `the document is larger than ${maxBytes} bytes`);
    if (Number(header(headers['content-length'])) > maxBytes) throw tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge();
      chunks.push(chunk);
    }
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)));
    } catch (cause) {
      throw new SafeFetchError('invalid_json', 'the document is not valid UTF-8 JSON', { cause });
    }
    return { json, ...cachePolicy(header(headers['cache-control'])) };
  } catch (err) {
    if (err instanceof SafeFetchError) throw err;
    const code = (err as { code?: unknown } | null)?.code;
    if (signal.aborted || (typeof code === 'string' && TIMEOUT_CODES.has(code))) {
      throw new SafeFetchError('timeout', `no complete answer within ${timeoutMs} ms`, { cause: err });
    }
    throw new SafeFetchError('connection_failed', 'the document could not be fetched', { cause: err });
  } finally {
    await agent.destroy();
  }
}
