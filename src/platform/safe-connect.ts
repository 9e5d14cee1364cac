import { BlockList, isIP, type LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { dnsResolverLookup, isPublicAddress, type LookupFn } from './safe-fetch.ts';

/**
 * Connections to upstream URLs an untrusted party chose (a tenant's provider
 * base_url), guarded against server-side request forgery (OWASP SSRF
 * Prevention Cheat Sheet): names are resolved through c-ares, every address
 * must be public (isPublicAddress: private, loopback, link-local, reserved
 * and special ranges refused in every notation) unless the policy allows it,
 * and the socket connects only to the addresses just checked. The check runs
 * on every new connection, not once when the URL is stored, so a name that
 * answers with a public address first and a private one later (DNS
 * rebinding) is refused when it turns. Redirects are the caller's business:
 * undici's request() does not follow them.
 */

/**
 * Which non-public upstreams are allowed: everything (`allowAll`, unsafe when
 * tenants are not trusted), host names (any address they resolve to) and
 * CIDR ranges (`10.0.0.0/8`, `fd00::/8`; a bare address is its own range).
 */
export interface UpstreamPolicy {
  allowAll: boolean;
  hosts: string[];
  cidrs: string[];
}

export const PUBLIC_ONLY: UpstreamPolicy = { allowAll: false, hosts: [], cidrs: [] };

export type UpstreamRefusalCode =
  | 'invalid_url' | 'insecure_scheme' | 'userinfo_not_allowed' | 'fragment_not_allowed'
  | 'forbidden_address' | 'dns_failed';

/** Why a URL or a connection was refused. Messages name no URL or address (a URL's query may hold secrets). */
export class UpstreamRefusedError extends Error {
  readonly code: UpstreamRefusalCode;

  constructor(code: UpstreamRefusalCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'UpstreamRefusedError';
    this.code = code;
  }
}

export type UpstreamCheck = { ok: true; url: URL; addresses: string[] } | { ok: false; code: UpstreamRefusalCode; message: string };

/** The policy compiled once: a lookup set of hosts and a BlockList of ranges (it matches IPv4-mapped IPv6 too). */
interface CompiledPolicy {
  allowAll: boolean;
  hosts: Set<string>;
  ranges: BlockList;
}

function compile(policy: UpstreamPolicy): CompiledPolicy {
  const ranges = new BlockList();
  for (const cidr of policy.cidrs) {
    const [address = '', prefix] = cidr.split('/');
    const family = isIP(address);
    if (family === 0) throw new Error(`not a CIDR range: ${cidr}`);
    ranges.addSubnet(address, prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
  }
  return { allowAll: policy.allowAll, hosts: new Set(policy.hosts.map(normalHost)), ranges };
}

/** A host as the WHATWG URL parser writes it (`0x7f.1` and `2130706433` become `127.0.0.1`), lower-case, no brackets or final dot. */
function normalHost(host: string): string {
  const parsed = URL.parse(`http://${isIP(host) === 6 ? `[${host}]` : host}/`)?.hostname ?? host.toLowerCase();
  return parsed.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
}

/** Whether the policy names this host itself (not merely its addresses). */
function hostAllowed(policy: CompiledPolicy, host: string): boolean {
  return policy.allowAll || policy.hosts.has(host);
}

function addressAllowed(policy: CompiledPolicy, address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return isPublicAddress(address) || policy.allowAll || policy.ranges.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The addresses of `host` (an IP literal is its own), each checked; throws UpstreamRefusedError. */
async function resolveChecked(policy: CompiledPolicy, host: string, lookup: LookupFn): Promise<string[]> {
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = await lookup(host);
    } catch (cause) {
      throw new UpstreamRefusedError('dns_failed', 'the upstream host name could not be resolved', { cause });
    }
    if (addresses.length === 0 || !addresses.every((a) => isIP(a))) {
      throw new UpstreamRefusedError('dns_failed', 'the upstream host name has no usable address');
    }
  }
  if (!hostAllowed(policy, host) && !addresses.every((a) => addressAllowed(policy, a))) {
    throw new UpstreamRefusedError('forbidden_address', 'the upstream host is a private, loopback, link-local or reserved address');
  }
  return addresses;
}

/**
 * Checks a base URL before it is stored: http(s) only, and http only for a
 * host the policy allows (by name, by range, or everything); no user name
 * or password; no fragment; every address it resolves to public or allowed.
 * A host the policy names is not resolved (it may only resolve inside the
 * gateway's network).
 */
export async function checkUpstreamUrl(url: string, policy: UpstreamPolicy, lookup: LookupFn = dnsResolverLookup()): Promise<UpstreamCheck> {
  const refuse = (code: UpstreamRefusalCode, message: string): UpstreamCheck => ({ ok: false, code, message });
  const target = URL.parse(url);
  if (!target || (target.protocol !== 'https:' && target.protocol !== 'http:')) return refuse('invalid_url', 'the URL must be an absolute https URL');
  if (target.username || target.password) return refuse('userinfo_not_allowed', 'the URL must not contain a user name or password');
  if (target.href.includes('#')) return refuse('fragment_not_allowed', 'the URL must not contain a fragment');
  const compiled = compile(policy);
  const host = normalHost(target.hostname);
  let addresses: string[] = [];
  if (!hostAllowed(compiled, host)) {
    try {
      addresses = await resolveChecked(compiled, host, lookup);
    } catch (err) {
      if (err instanceof UpstreamRefusedError) return refuse(err.code, err.message);
      throw err;
    }
  }
  if (target.protocol === 'http:') {
    const allowedPrivately = hostAllowed(compiled, host) || (addresses.length > 0 && addresses.every((a) => compiled.ranges.check(a, isIP(a) === 4 ? 'ipv4' : 'ipv6')));
    if (!allowedPrivately) return refuse('insecure_scheme', 'the URL must use https (http only for upstreams GATEWAY_ALLOW_PRIVATE_UPSTREAMS allows)');
  }
  return { ok: true, url: target, addresses };
}

export interface SafeConnectorOptions {
  /** Default: c-ares through dnsResolverLookup (never getaddrinfo on libuv's thread pool). */
  lookup?: LookupFn;
  /** Passed to undici's buildConnector (connect timeout, keep-alive, TLS options). */
  connect?: buildConnector.BuildOptions;
}

/**
 * A connect function for undici's Pool/Agent/Client (`connect` option): each
 * new socket resolves its host, checks every address against the policy and
 * connects only to those addresses (net.connect asks our lookup instead of
 * DNS; Node's happy eyeballs asks with `all: true`). IP literals skip net's
 * lookup, so they are checked before connecting. The host name stays in the
 * Host header, TLS SNI and the certificate check.
 */
export function safeConnector(policy: UpstreamPolicy, options: SafeConnectorOptions = {}): buildConnector.connector {
  const compiled = compile(policy);
  const resolveName = options.lookup ?? dnsResolverLookup();
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolveChecked(compiled, normalHost(hostname), resolveName).then(
      (addresses) => {
        const family = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
        const pinned = addresses.map((address) => ({ address, family: isIP(address) })).filter((a) => family === 0 || a.family === family);
        if (pinned.length === 0) callback(new UpstreamRefusedError('dns_failed', 'the upstream host has no address of the requested family'), '', 0);
        else if (lookupOptions.all) callback(null, pinned);
        else callback(null, pinned[0]!.address, pinned[0]!.family);
      },
      (err: Error) => callback(err, '', 0),
    );
  };
  const connect = buildConnector({ ...options.connect, lookup } as buildConnector.BuildOptions);
  return function safeConnect(connectOptions, callback) {
    const host = normalHost(connectOptions.hostname);
    if (isIP(host) && !hostAllowed(compiled, host) && !addressAllowed(compiled, host)) {
      callback(new UpstreamRefusedError('forbidden_address', 'the upstream host is a private, loopback, link-local or reserved address'), null);
      return;
    }
    connect(connectOptions, callback);
  };
}
