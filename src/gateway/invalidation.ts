import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * Tells every replica's in-process caches that something changed: an API key
 * revoked, a tenant's provider keys or settings changed. Without Redis there
 * is one process and the message is delivered at once; with Redis it is
 * published on one channel that every replica subscribes to (a dedicated
 * subscriber connection: a subscribed ioredis client can run no other command).
 * The caches also expire entries after a short TTL, which bounds the damage
 * of a message lost while Redis was unreachable.
 */
export type Invalidation =
  | { kind: 'api-key'; keyHash: string }
  | { kind: 'tenant'; tenantId: string }
  /** The subscription was re-established: messages may have been missed meanwhile, so every cache starts over. */
  | { kind: 'all' };

export interface InvalidationBus {
  publish(message: Invalidation): Promise<void>;
  subscribe(handler: (message: Invalidation) => void): void;
  close(): Promise<void>;
}

const CHANNEL = 'gateway:invalidate';

export function invalidationBus(redis: Redis | undefined, log: Logger): InvalidationBus {
  const handlers: ((message: Invalidation) => void)[] = [];
  const deliver = (message: Invalidation) => {
    for (const handler of handlers) handler(message);
  };
  if (!redis) {
    return {
      async publish(message) {
        deliver(message);
      },
      subscribe: (handler) => void handlers.push(handler),
      async close() {},
    };
  }
  // The shared client has no offline queue (commands fail fast while Redis is away); the subscriber
  // needs one, so that SUBSCRIBE waits for the connection, and ioredis re-subscribes after a reconnect.
  const subscriber = redis.duplicate({ enableOfflineQueue: true });
  subscriber.on('error', (err) => log.warn({ err: err.message }, 'redis subscriber error'));
  subscriber.subscribe(CHANNEL).catch((err: Error) => log.warn({ err: err.message }, 'redis subscribe failed'));
  let connections = 0;
  subscriber.on('ready', () => {
    // Not the first connection: whatever was published while this one was down is lost.
    if (connections++ > 0) deliver({ kind: 'all' });
  });
  subscriber.on('message', (_channel: string, text: string) => {
    const message = parse(text);
    if (message) deliver(message);
  });
  return {
    async publish(message) {
      // Delivered here at once as well: this replica must not wait on the round trip through Redis.
      deliver(message);
      try {
        await redis.publish(CHANNEL, JSON.stringify(message));
      } catch (err) {
        log.warn({ err: (err as Error).message, kind: message.kind }, 'could not publish a cache invalidation; other replicas catch up when their entries expire');
      }
    },
    subscribe: (handler) => void handlers.push(handler),
    async close() {
      subscriber.disconnect();
    },
  };
}

function parse(text: string): Invalidation | undefined {
  try {
    const value = JSON.parse(text) as Partial<Record<string, unknown>>;
    if (value['kind'] === 'api-key' && typeof value['keyHash'] === 'string') return { kind: 'api-key', keyHash: value['keyHash'] };
    if (value['kind'] === 'tenant' && typeof value['tenantId'] === 'string') return { kind: 'tenant', tenantId: value['tenantId'] };
  } catch {}
  return undefined;
}
