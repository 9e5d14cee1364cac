import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import type { Flight } from '../../../src/gateway/cache/flight.ts';
import { InFlight } from '../../../src/gateway/cache/in-flight.ts';
import type { Call } from '../../../src/gateway/pipeline/call.ts';
import { CHAT_COMPLETIONS } from '../../../src/gateway/surfaces/chat-completions/surface.ts';

/**
 * The flights in progress are found by 30 bits of their key (in-flight.ts):
 * two different keys may share them. Such a pair must each get an upstream
 * call and an answer of its own, and identical keys must still share one.
 * "Aa" and "BB" hash alike (31 * 65 + 97 = 31 * 66 + 66), so keys that only
 * differ there collide.
 */
const SUFFIX = 'x'.repeat(41);

/** A call with only what dedup (in-flight.ts, flight.ts) and the replay of a shared answer read or write. */
function call(key: string): Call {
  const controller = new AbortController();
  return {
    tenant: { tenantId: 't' },
    surface: CHAT_COMPLETIONS,
    stream: false,
    includeUsage: false,
    signal: controller.signal,
    abort: () => controller.abort(),
    onClientClose: undefined,
    response: new PassThrough(),
    openStream: () => {},
    targets: [],
    attempts: [],
    noCache: false,
    cacheKey: key,
    cacheStatus: 'miss',
    tokensSaved: 0,
    saved: { cache: 0, compaction: 0, routing: 0, promptCache: 0 },
    providerCacheSaved: 0,
    status: 200,
    upstreamMs: 0,
    streamOpened: false,
  } as unknown as Call;
}

describe('in-flight dedup: flights found by a slot of their key', () => {
  test('two keys sharing a slot each get their own upstream call and answer; an identical key still joins', async () => {
    const stored: string[] = [];
    const flights = new InFlight({
      remote: undefined,
      log: pino({ level: 'silent' }),
      store: (_owner, flight: Flight) => {
        stored.push(flight.key);
      },
      fromStore: async () => false,
    });
    const upstream: string[] = [];
    // The upstream call answers with its own key, after the others have arrived.
    const next = (c?: Call) => {
      const leader = c!;
      upstream.push(leader.cacheKey!);
      return new Promise<void>((resolve) =>
        setTimeout(() => {
          leader.result = JSON.stringify({ choices: [], answer: leader.cacheKey });
          resolve();
        }, 20),
      );
    };
    const a = call(`Aa${SUFFIX}`);
    const b = call(`BB${SUFFIX}`);
    const twinOfA = call(`Aa${SUFFIX}`);
    // The twin comes while its key still holds the slot; then the colliding key takes the slot over.
    const runs = [a, twinOfA, b].map((c) => flights.run(c, (other) => next(other ?? c), true));
    assert.equal(flights.size, 1, 'the colliding key replaced the first in the table (the first keeps its joiners)');
    await Promise.all(runs);
    assert.deepEqual(upstream.sort(), [`Aa${SUFFIX}`, `BB${SUFFIX}`].sort(), 'one upstream call per distinct key');
    assert.equal(JSON.parse(a.result!).answer, `Aa${SUFFIX}`);
    assert.equal(JSON.parse(b.result!).answer, `BB${SUFFIX}`, 'never the answer of the key it collided with');
    assert.equal(twinOfA.cacheStatus, 'dedup', 'the identical request joined the first flight');
    assert.equal(JSON.parse(twinOfA.result!).answer, `Aa${SUFFIX}`);
    assert.equal(flights.size, 0, 'every flight is dropped once finished');
    assert.deepEqual(stored.sort(), [`Aa${SUFFIX}`, `BB${SUFFIX}`].sort());
  });
});
