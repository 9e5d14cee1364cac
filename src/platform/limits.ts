import { isIPv6 } from 'node:net';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateSetting } from './config.ts';

export type LimitResult = { allowed: true } | { allowed: false; retryAfterMs: number };

/** A fixed-window bucket: `points` requests per key per window of `durationSeconds`. */
export interface RateLimiter {
  readonly name: string;
  consume(key: string): Promise<LimitResult>;
}

/**
 * In memory for a single process, or in Redis when replicas must share the
 * count. When Redis is unreachable the bucket falls back to per-process memory
 * rather than failing every request (an outage of Redis is no outage of login).
 */
export function createRateLimiter(name: string, setting: RateSetting, redis?: Redis): RateLimiter {
  const base = { points: setting.points, duration: setting.durationSeconds, keyPrefix: `rl:${name}` };
  const memory = new RateLimiterMemory(base);
  const limiter = redis ? new RateLimiterRedis({ ...base, storeClient: redis, insuranceLimiter: memory }) : memory;
  return {
    name,
    async consume(key: string): Promise<LimitResult> {
      try {
        await limiter.consume(bucketKey(key), 1);
        return { allowed: true };
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return { allowed: false, retryAfterMs: rejection.msBeforeNext };
        throw rejection;
      }
    },
  };
}

/**
 * The bucket a key counts in. An IPv6 address counts per /64: one subscriber
 * or host is handed a whole /64 (RFC 6177, RFC 7934), so per-address buckets
 * would let it walk through 2^64 fresh addresses. An IPv4-mapped IPv6 address
 * (a dual-stack socket's view of an IPv4 client) counts as its IPv4 address.
 * Any other key (an IPv4 address, an email) is its own bucket.
 */
export function bucketKey(key: string): string {
  if (!isIPv6(key)) return key;
  const groups = ipv6Groups(key);
  if (!groups) return key;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (already checked by isIPv6): `::` expanded, a dotted IPv4 tail converted, a zone dropped. */
function ipv6Groups(address: string): number[] | null {
  let text = address.split('%')[0]!.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = rest === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...Array<string>(zeros).fill('0'), ...right].map((g) => Number.parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}
