import { isIP } from 'node:net';

/**
 * Which proxies' X-Forwarded-For the HTTP layer believes, as Fastify's
 * `trustProxy` takes it (proxy-addr semantics): the client address is the
 * rightmost hop that is not a trusted proxy. `false`: the connection's peer is
 * the client. A number: that many hops in front of the service are proxies.
 * A list: the proxies' addresses and CIDR ranges.
 *
 * Never `true`: it trusts every hop, so the client address becomes the
 * leftmost X-Forwarded-For value, which the client itself writes, and every
 * per-IP rate limit can be bypassed by sending a new one with each request.
 */
export type TrustProxy = false | number | string[];

/** proxy-addr's named ranges, accepted in the list as well. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

const HINT =
  'set it to the addresses or CIDR ranges of your proxies, comma-separated (e.g. "10.0.0.5" or "10.0.0.0/8, fd00::/8"), ' +
  'or to the number of proxies in front of the service (e.g. "1" for one nginx)';

/**
 * Reads a trust-proxy setting: unset, "false" or "0": none; an integer: a hop
 * count; otherwise a list of addresses, CIDR ranges and proxy-addr's named
 * ranges. Returns the problem instead when the value is `true`, holds a /0
 * range (every address: the same thing) or is malformed, so that Fastify's
 * proxy-addr never meets a value it would refuse with a raw TypeError.
 */
export function parseTrustProxy(name: string, raw: string | undefined): { value: TrustProxy } | { problem: string } {
  const text = raw?.trim().toLowerCase() ?? '';
  if (text === '' || text === 'false' || text === '0') return { value: false };
  if (text === 'true') {
    return {
      problem:
        `${name}=true is refused: it would take the client address from the leftmost X-Forwarded-For value, ` +
        `which the client writes itself; ${HINT}`,
    };
  }
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    return hops <= 10 ? { value: hops } : { problem: `${name}: a hop count must be from 0 to 10 (got "${raw}"); ${HINT}` };
  }
  const entries = text.split(',').map((e) => e.trim()).filter(Boolean);
  if (entries.length === 0) return { problem: `${name} is empty; ${HINT}` };
  const bad = entries.filter((e) => !isAddressOrRange(e));
  if (bad.length > 0) return { problem: `${name}: "${bad.join('", "')}" is not an IP address or CIDR range; ${HINT}` };
  // A /0 range is every address: `true` under another name (and proxy-addr throws a raw TypeError on it at start).
  const everything = entries.filter((e) => /\/0+$/.test(e));
  if (everything.length > 0) {
    return {
      problem:
        `${name}: "${everything.join('", "')}" trusts every address, as ${name}=true would, and is refused: the client address ` +
        `would be the leftmost X-Forwarded-For value, which the client writes itself; ${HINT}`,
    };
  }
  return { value: entries };
}

/**
 * The setting as Fastify's `trustProxy` option. A hop count becomes a
 * function, as proxy-addr compiles one: Fastify 5 now fails closed on a bare
 * number, because a hop count trusts whatever peer connects, so it is safe
 * only when nothing but the proxies can reach the service's port (documented).
 */
export function fastifyTrustProxy(setting: TrustProxy): false | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting !== 'number') return setting;
  if (setting === 0) return false;
  return (_address, hop) => hop < setting;
}

function isAddressOrRange(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0 || address!.includes('%')) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}
