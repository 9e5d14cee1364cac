import type { Logger } from 'pino';
import { type Call, unanswered } from '../pipeline/call.ts';
import { EventSink } from './sse-events.ts';
import { Flight, type FlightOutcome, LeaderLost, leaderLost } from './flight.ts';
import type { Publisher, RemoteFlights } from './remote-flights.ts';

type Next = (call?: Call) => Promise<void>;

/** The response of a flight's non-streamed call: nothing is ever written to it. */
const NOT_STREAMED = new EventSink(
  () => {},
  () => {},
);

/**
 * The flights in progress on this replica, by cache key (tenant-scoped).
 * A call either joins the flight of its key or starts one: its own call of
 * the rest of the pipeline (prompt caching, upstream with retries and
 * fallbacks), made on a copy of the first client's call whose signal aborts
 * only when every client has left, and whose stream goes to the flight
 * instead of a socket. Every client, the first included, subscribes to the
 * flight. With Redis (RemoteFlights), the first replica to ask makes the
 * call and the others follow it.
 *
 * Every completed call goes through a flight, even when dedup is off for
 * the tenant (a flight no one else can join): the flight records the
 * answer, and `store` keeps it once it is complete.
 */
export class InFlight {
  readonly #flights = new Map<string, Flight>();
  readonly #remote: RemoteFlights | undefined;
  readonly #log: Logger;
  readonly #store: (leader: Call, flight: Flight) => Promise<void>;
  readonly #fromStore: (call: Call) => Promise<boolean>;

  constructor(options: {
    remote: RemoteFlights | undefined;
    log: Logger;
    /** Keeps a flight's complete answer. */
    store: (leader: Call, flight: Flight) => Promise<void>;
    /** Answers `call` from the store if the answer is there now (true), for a client whose leader replica was lost. */
    fromStore: (call: Call) => Promise<boolean>;
  }) {
    this.#remote = options.remote;
    this.#log = options.log;
    this.#store = options.store;
    this.#fromStore = options.fromStore;
  }

  /** Flights in progress here (for tests and metrics). */
  get size(): number {
    return this.#flights.size;
  }

  /** Answers `call` (its cacheKey set) through a flight; `dedup`: joining and sharing allowed. */
  async run(call: Call, next: Next, dedup: boolean): Promise<void> {
    for (let tries = 0; ; tries++) {
      try {
        return await this.#runOnce(call, next, dedup);
      } catch (err) {
        // The replica making the call died before this client received anything: ask again (at most twice).
        if (!(err instanceof LeaderLost)) throw err;
        if (tries === 2) throw leaderLost();
        // The lost leader, or a follower that took over before this one, may have stored the answer meanwhile.
        if (await this.#fromStore(call)) return;
      }
    }
  }

  #runOnce(call: Call, next: Next, dedup: boolean): Promise<void> {
    const key = call.cacheKey!;
    if (dedup) {
      const running = this.#flights.get(key);
      if (running && !running.abandoned && (!running.finished || running.storable)) return running.join(call, false);
    }
    const flight = new Flight(key, call.stream, {
      onEmpty: (f) => this.#empty(f),
      onFinish: (f) => this.#finish(f, call),
    });
    if (dedup) this.#flights.set(key, flight);
    const joined = flight.join(call, true);
    if (dedup && this.#remote) void this.#claim(this.#remote, flight, call, next);
    else this.#start(flight, call, next, undefined);
    return joined;
  }

  async #claim(remote: RemoteFlights, flight: Flight, leader: Call, next: Next): Promise<void> {
    let claim: Awaited<ReturnType<RemoteFlights['claim']>> | undefined;
    try {
      claim = await remote.claim(leader.tenant.tenantId, flight.key);
    } catch (err) {
      // Redis away: dedup stays within this replica.
      this.#log.warn({ err: (err as Error).message }, 'dedup: redis lock failed; calling without cross-replica dedup');
    }
    if (claim && 'follow' in claim) {
      flight.follow();
      remote.follow(claim.follow, flight, (stop) => {
        flight.stop = stop;
      });
      if (flight.abandoned || flight.subscribers === 0) this.#empty(flight);
      return;
    }
    const publisher = claim?.publisher;
    if (flight.subscribers === 0) {
      // Everyone left while the lock was taken (a follower elsewhere, if any, takes over after a lease).
      publisher?.release();
      this.#drop(flight);
      return;
    }
    this.#start(flight, leader, next, publisher);
  }

  /** Runs the rest of the pipeline for the flight, on a call of its own. */
  #start(flight: Flight, leader: Call, next: Next, publisher: Publisher | undefined): void {
    const controller = new AbortController();
    // Only a stream writes to its call's response; a non-streamed call never does.
    const sink = leader.stream
      ? new EventSink(
          (text) => {
            flight.event(text);
            publisher?.event(text);
          },
          () => flight.streamEnd(),
        )
      : NOT_STREAMED;
    const own: Call = {
      ...leader,
      signal: controller.signal,
      response: sink,
      // The flight always gets the usage chunk (it is stored, and priced); each client sees it only if it asked.
      includeUsage: leader.stream || leader.includeUsage,
      openStream() {
        own.streamOpened = true;
        flight.open();
        publisher?.open();
      },
      targets: leader.targets.slice(),
      attempts: [],
      saved: { ...leader.saved, cache: 0, promptCache: 0 },
      ...unanswered(),
    };
    flight.stop = () => controller.abort();
    flight.othersWaiting = publisher ? () => publisher.othersWaiting() : undefined;
    flight.release = publisher ? () => publisher.release() : undefined;
    next(own).then(
      () => {
        const outcome = outcomeOf(own);
        flight.complete(outcome);
        publisher?.complete(outcome);
      },
      (err: unknown) => {
        flight.fail(err);
        publisher?.fail(err);
      },
    );
  }

  /** Nobody is left on this replica: stop the call, unless clients on other replicas still wait for it. */
  #empty(flight: Flight): void {
    if (flight.abandoned || flight.finished) return;
    const others = flight.othersWaiting;
    if (!others) {
      this.#abandon(flight);
      return;
    }
    others().then(
      (waiting) => {
        if (flight.subscribers > 0 || flight.finished) return;
        if (!waiting) this.#abandon(flight);
        else setTimeout(() => flight.subscribers === 0 && this.#empty(flight), 500).unref();
      },
      () => this.#abandon(flight),
    );
  }

  #abandon(flight: Flight): void {
    flight.abandoned = true;
    this.#drop(flight);
    flight.stop?.();
  }

  #finish(flight: Flight, leader: Call): void {
    if (!flight.local || flight.outcome?.status !== 200 || !flight.storable) {
      this.#drop(flight);
      flight.release?.();
      return;
    }
    // Until the answer is stored, identical requests still join the finished flight (then the cache answers
    // them); the Redis lock too is released only then, so that no replica finds neither.
    this.#store(leader, flight)
      .catch((err: Error) => this.#log.warn({ err: err.message }, 'cache: storing an answer failed'))
      .finally(() => {
        this.#drop(flight);
        flight.release?.();
      });
  }

  #drop(flight: Flight): void {
    if (this.#flights.get(flight.key) === flight) this.#flights.delete(flight.key);
  }
}

function outcomeOf(call: Call): FlightOutcome {
  return {
    status: call.status,
    errorCode: call.errorCode,
    usage: call.usage,
    costUsd: call.costUsd,
    provider: call.target?.provider.id,
    modelUsed: call.modelUsed,
    target: call.target,
    attempts: call.attempts,
    routeReason: call.routeReason,
    promptCacheSaved: call.saved.promptCache,
    result: call.result,
  };
}
