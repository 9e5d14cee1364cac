import type { Logger } from 'pino';
import { HttpProblem } from '../../platform/errors.ts';
import type { Call } from '../pipeline/call.ts';
import type { TenantContext } from '../data-plane/tenant-context.ts';
import { Flight, type FlightOutcome, JoinedTooLate, LeaderLost, leaderLost } from './flight.ts';
import { clientClosed } from './flight-errors.ts';
import { slotOf } from './slot-table.ts';
import type { Publisher, RemoteFlights } from './remote-flights.ts';
import { EventSink } from './sse-events.ts';

type Next = (call?: Call) => Promise<void>;

/** The leader's fields dedup rewires while its call is upstream (the stages after it only read them). */
type Rewired = { -readonly [K in 'signal' | 'response' | 'openStream' | 'includeUsage']: Call[K] };

/** The leader's tenant and whether it bypassed the cache: all the store needs once the flight has its outcome. */
export interface FlightOwner {
  tenant: Call['tenant'];
  noCache: boolean;
}

/**
 * The flight's controls, made here rather than in #lead: closures share
 * their function's context, so one made there would keep the leader's
 * whole call reachable from the flight, which outlives it (a reference from
 * the flight to the call alone tripled what survives each minor GC).
 */
function wire(flight: Flight, abort: () => void, publisher: Publisher | undefined): void {
  flight.stop = abort;
  flight.othersWaiting = publisher ? () => publisher.othersWaiting() : undefined;
  flight.release = publisher ? () => publisher.release() : undefined;
}

/**
 * The flights in progress on this replica, by cache key (tenant-scoped).
 * A call either joins the flight of its key or leads one: the rest of the
 * pipeline (prompt caching, upstream with retries and fallbacks) runs on
 * the leader's own call, with a signal that aborts only when every client
 * has left, and a stream that goes to the flight (which fans it out to
 * the clients that joined) as well as to the leader. With Redis
 * (RemoteFlights), the first replica to ask makes the call and the others
 * follow it: their clients, the would-be leader included, join.
 *
 * Every completed call goes through a flight, even when dedup is off for
 * the tenant (a flight no one else can join): the flight records the
 * answer, and `store` keeps it once it is complete.
 */
export class InFlight {
  /**
   * By key. A dictionary object, not a Map: a long-lived Map whose entries
   * come and go with every call keeps each call's flight (and all it points
   * to) alive through minor GCs until the next full one. Every table a Map
   * outgrows or shrinks from links to its successor, and a dead table in
   * the old generation is still a root for the young one, so the chain
   * carries every entry the Map ever held into the old generation (measured:
   * 133 MB promoted against 3 MB for the same churn through a dictionary).
   * Keyed by a number taken from the key (slotOf), not the key itself: a
   * fresh string used as a property name is looked up in V8's string table,
   * and kept there once stored, on every call (about 1 % of the event loop's
   * time under benchmark 5's load). Two keys in flight at once that share a
   * slot cost the older one its joiners to come, never a wrong answer: the
   * flight found is used only if its key is the call's.
   */
  readonly #flights: Record<number, Flight> = Object.create(null);
  #count = 0;
  readonly #remote: RemoteFlights | undefined;
  readonly #log: Logger;
  readonly #store: (owner: FlightOwner, flight: Flight) => void | Promise<void>;
  readonly #fromStore: (call: Call) => Promise<boolean>;
  readonly #maxHeld: (tenant: TenantContext) => number;

  constructor(options: {
    remote: RemoteFlights | undefined;
    log: Logger;
    /** Keeps a flight's complete answer. */
    store: (owner: FlightOwner, flight: Flight) => void | Promise<void>;
    /** Answers `call` from the store if the answer is there now (true), for a client whose leader replica was lost. */
    fromStore: (call: Call) => Promise<boolean>;
    /** Most characters of an answer a flight holds (the tenant's cache entry limit); default 1 MiB. */
    maxHeld?: (tenant: TenantContext) => number;
  }) {
    this.#remote = options.remote;
    this.#log = options.log;
    this.#store = options.store;
    this.#fromStore = options.fromStore;
    this.#maxHeld = options.maxHeld ?? (() => 1024 * 1024);
  }

  /** Flights in progress here (for tests and metrics). */
  get size(): number {
    return this.#count;
  }

  /** Answers `call` (its cacheKey set) through a flight; `dedup`: joining and sharing allowed. */
  run(call: Call, next: Next, dedup: boolean): Promise<void> {
    // A leader is lost only on another replica (Redis): within one process the flight is all there is to wait on.
    if (!this.#remote) {
      try {
        return this.#runOnce(call, next, dedup);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return this.#runAcrossReplicas(call, next, dedup);
  }

  async #runAcrossReplicas(call: Call, next: Next, dedup: boolean): Promise<void> {
    for (let tries = 0; ; tries++) {
      try {
        return await this.#runOnce(call, next, dedup);
      } catch (err) {
        // The replica making the call died before this client received anything: ask again (at most twice).
        if (!(err instanceof LeaderLost)) throw err;
        if (tries === 2) throw leaderLost();
        // Asked again, the call starts unanswered (the lost flight marked it failed).
        call.status = 200;
        call.errorCode = undefined;
        // The lost leader, or a follower that took over before this one, may have stored the answer meanwhile.
        if (await this.#fromStore(call)) return;
      }
    }
  }

  #runOnce(call: Call, next: Next, dedup: boolean): Promise<void> {
    const key = call.cacheKey!;
    const slot = slotOf(key);
    if (dedup) {
      const running = this.#flights[slot];
      // A flight past its bound no longer holds the answer's start: the call makes its own instead of joining it.
      const joinable = running && running.key === key && !running.abandoned && !running.overflowed && (!running.finished || running.storable);
      if (joinable) return this.#join(running, call, next);
    }
    // What storing the answer needs of the leader, and nothing more: objects the flight points to live as long as it.
    const owner: FlightOwner = { tenant: call.tenant, noCache: call.noCache };
    const flight = new Flight(key, call.stream, call.surface.answers, this.#maxHeld(call.tenant), {
      onEmpty: (f) => this.#empty(f),
      onFinish: (f) => this.#finish(f, owner),
    });
    if (dedup) {
      if (this.#flights[slot] === undefined) this.#count++;
      this.#flights[slot] = flight;
    }
    if (dedup && this.#remote) return this.#claim(this.#remote, flight, call, next);
    return this.#lead(flight, call, next, undefined);
  }

  /** Waits for `flight`'s answer; if the flight dropped its start before answering this client, makes its own call. */
  #join(flight: Flight, call: Call, next: Next): Promise<void> {
    return flight.join(call).catch((err: unknown) => {
      if (!(err instanceof JoinedTooLate)) throw err;
      call.cacheStatus = 'miss';
      call.status = 200;
      call.errorCode = undefined;
      return this.#runOnce(call, next, false);
    });
  }

  /** With Redis: lead the flight if this replica is first to ask, else follow the replica that is. */
  async #claim(remote: RemoteFlights, flight: Flight, leader: Call, next: Next): Promise<void> {
    let claim: Awaited<ReturnType<RemoteFlights['claim']>> | undefined;
    try {
      claim = await remote.claim(leader.tenant.tenantId, flight.key, flight.maxHeld);
    } catch (err) {
      // Redis away: dedup stays within this replica.
      this.#log.warn({ err: (err as Error).message }, 'dedup: redis lock failed; calling without cross-replica dedup');
    }
    if (claim && 'follow' in claim) {
      const followed = remote.follow(claim.follow, flight, (stop) => {
        flight.stop = stop;
      });
      if (!followed) {
        // This replica follows that call already, for a flight that dropped the answer's start: a call of its own.
        this.#drop(flight);
        return this.#runOnce(leader, next, false);
      }
      flight.follow();
      const joined = this.#join(flight, leader, next);
      if (flight.abandoned || flight.subscribers === 0) this.#empty(flight);
      return joined;
    }
    const publisher = claim?.publisher;
    if (leader.signal.aborted) {
      // The leader left while the lock was taken: a client that joined meanwhile takes its place.
      if (flight.subscribers === 0) {
        publisher?.release();
        this.#drop(flight);
        throw clientClosed();
      }
    }
    return this.#lead(flight, leader, next, publisher);
  }

  /**
   * Runs the rest of the pipeline on the leader's own call, which the flight
   * keeps going while any client waits: the leader's client leaving only
   * tells the flight (onClientClose), and the call's signal aborts when no
   * client is left (flight.stop). A stream is recorded by the flight (and
   * published) as it goes to the leader. Once answered, the flight settles
   * every client that joined, and the answer is stored.
   *
   * No AbortController or abort listener of the flight's own (but in the
   * rare case below): either, made for every call, kept each call's objects
   * alive through minor GCs (into the old generation, measured at 0.9 to
   * 1.7 MB per scavenge under load, against 0.1 MB without), which
   * lengthened every scavenge's pause.
   */
  async #lead(flight: Flight, leader: Call, next: Next, publisher: Publisher | undefined): Promise<void> {
    const call = leader as Omit<Call, keyof Rewired> & Rewired;
    const { signal, response, openStream, includeUsage } = call;
    if (!signal.aborted) {
      wire(flight, call.abort, publisher);
      flight.lead();
      call.onClientClose = flight.leaderLeft;
    } else {
      // The leader left while the Redis lock was taken and others joined meanwhile (#claim): the call goes on for
      // them on a signal of its own, the leader's being aborted already. Rare, so only then a controller of its own.
      const controller = new AbortController();
      call.signal = controller.signal;
      wire(flight, controller.abort.bind(controller), publisher);
      if (flight.subscribers === 0) this.#empty(flight);
    }
    if (call.stream) {
      // The flight always gets the usage chunk (it is stored, and priced); the leader sees it only if it asked.
      call.includeUsage = true;
      call.response = new EventSink(
        (text) => {
          const kind = flight.event(text);
          publisher?.event(text);
          if (flight.leaderPresent && (kind !== 'usage' || includeUsage) && !response.destroyed && !response.writableEnded) response.write(text);
        },
        () => {
          flight.streamEnd();
          if (!response.destroyed && !response.writableEnded) response.end();
        },
        (resume) => holdForLeader(flight, response, resume),
      );
      call.openStream = () => {
        openStream();
        flight.open();
        publisher?.open();
      };
    }
    const restore = () => {
      call.signal = signal;
      call.onClientClose = undefined;
      // The leader's client left while others waited: from now on its call is as any other whose client left.
      if (!flight.leaderPresent) call.abort();
      call.response = response;
      call.openStream = openStream;
      call.includeUsage = includeUsage;
    };
    try {
      await next();
    } catch (err) {
      restore();
      const present = flight.leaderPresent;
      flight.fail(err);
      publisher?.fail(err);
      if (!present) throw clientClosed();
      if (call.streamOpened && !response.destroyed && !response.writableEnded) {
        response.end(flight.format.errorEvent(err instanceof HttpProblem ? err : new HttpProblem(500, 'internal_error', 'The gateway failed.', { cause: err })));
        return;
      }
      throw err;
    }
    restore();
    const present = flight.leaderPresent;
    const outcome = outcomeOf(call);
    flight.complete(outcome);
    publisher?.complete(outcome);
    if (!present) {
      // The leader's client left while others waited: its record says so, and unless its stream already showed
      // it the usage, a client that stayed pays in its place.
      call.status = 499;
      call.errorCode = 'client_closed_request';
      if (!flight.leaderPays) {
        call.usage = undefined;
        call.costUsd = 0;
        call.saved.promptCache = 0;
        call.saved.compaction = 0;
        call.saved.routing = 0;
        call.providerCacheSaved = 0;
      }
      if (!call.streamOpened) throw clientClosed();
    }
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

  #finish(flight: Flight, owner: FlightOwner): void {
    if (!flight.local || flight.outcome?.status !== 200 || !flight.storable) {
      this.#drop(flight);
      flight.release?.();
      return;
    }
    // Until the answer is stored, identical requests still join the finished flight (then the cache answers
    // them); the Redis lock too is released only then, so that no replica finds neither.
    const failed = (err: Error) => this.#log.warn({ err: err.message }, 'cache: storing an answer failed');
    const done = () => {
      this.#drop(flight);
      flight.release?.();
    };
    try {
      const stored = this.#store(owner, flight);
      // The memory store keeps it at once; Redis answers later.
      if (stored instanceof Promise) {
        stored.catch(failed).finally(done);
        return;
      }
    } catch (err) {
      failed(err as Error);
    }
    done();
  }

  #drop(flight: Flight): void {
    const slot = slotOf(flight.key);
    if (this.#flights[slot] === flight) {
      delete this.#flights[slot];
      this.#count--;
    }
  }
}

/**
 * The upstream is read at the pace of the leader's client while it is
 * connected, as it is without dedup (relay-stream.ts waits for the socket):
 * otherwise a client reading slowly would have its socket buffer the whole
 * answer. True when `resume` will be called once its socket drains (or
 * closes). Followers are not waited for (Flight cuts one that falls too far
 * behind); once the leader's client has left, nothing is.
 */
function holdForLeader(flight: Flight, response: Call['response'], resume: () => void): boolean {
  if (!response.writableNeedDrain || response.destroyed || !flight.leaderPresent) return false;
  const go = () => {
    response.off('drain', go).off('close', go);
    resume();
  };
  response.on('drain', go).on('close', go);
  return true;
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
    compactionSaved: call.saved.compaction,
    routingSaved: call.saved.routing,
    providerCacheSaved: call.providerCacheSaved,
    result: call.result,
  };
}
