import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { HttpProblem } from '../../platform/errors.ts';
import { type Flight, type FlightOutcome, JoinedTooLate, LeaderLost } from './flight.ts';

/**
 * In-flight dedup across replicas, through Redis. The first replica to ask
 * takes a lock per key (`SET gw:dedup:<tenant>:<key> <flight id> NX PX
 * lease`), renews it while its call runs, and appends what its flight sees
 * to a Redis Stream named after the flight (`...:<flight id>`): `o` (the
 * stream opened), `e` (one SSE event), `c` (completed: the outcome, with a
 * non-streamed answer), `f` (failed: the error). A replica that finds the
 * lock taken follows that flight: it reads the Stream from its start (so a
 * late joiner gets what it missed), feeding a local Flight that its own
 * identical requests join.
 *
 * The Stream is bounded as the flight is (Flight.maxHeld, the tenant's
 * cache entry limit): entries have the ids 0-1, 0-2, ... in order, and once
 * the events in it pass the bound the oldest are trimmed as new ones come
 * (XADD MINID), so Redis keeps a window of the answer, never the whole of a
 * large one. A follower sees a gap in the ids when it joined after the
 * start was trimmed, or fell behind the window: its clients that received
 * nothing yet make their own call (JoinedTooLate), those whose stream had
 * started get a `dedup_fell_behind` error event. A non-streamed answer over
 * the bound is not published: followers make their own call.
 *
 * A leader replica that dies stops renewing its lock: followers that hear
 * nothing for a lease check the lock, and when it is gone without a `c` or
 * `f` entry they give up on it (LeaderLost): a client that has received
 * nothing yet tries again (taking the lock itself), one whose stream has
 * started gets a `dedup_leader_lost` error event. Followers mark their
 * presence (`...:w`, refreshed each third of a lease) so that the leader
 * replica does not abort its call when its own clients leave while other
 * replicas' clients still wait.
 *
 * One extra connection per replica reads every followed Stream in one
 * blocking XREAD, so the number of connections does not grow with flights.
 */
export class RemoteFlights {
  readonly #redis: Redis;
  readonly #leaseMs: number;
  readonly #log: Logger;
  readonly #follows = new Map<string, Follow>();
  #reader: Redis | undefined;
  #reading = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: { redis: Redis; leaseMs: number; log: Logger }) {
    this.#redis = options.redis;
    this.#leaseMs = options.leaseMs;
    this.#log = options.log;
  }

  /** Takes the key's lock (this replica calls upstream and publishes) or names the flight holding it. */
  async claim(tenantId: string, key: string, windowChars: number): Promise<{ publisher: Publisher } | { follow: { lockKey: string; flightId: string } }> {
    const lockKey = `gw:dedup:${tenantId}:${key}`;
    for (let tries = 0; tries < 3; tries++) {
      const flightId = randomBytes(9).toString('base64url');
      if ((await this.#redis.set(lockKey, flightId, 'PX', this.#leaseMs, 'NX')) === 'OK') {
        return { publisher: new Publisher(this.#redis, lockKey, flightId, this.#leaseMs, this.#log, windowChars) };
      }
      const holder = await this.#redis.get(lockKey);
      if (holder !== null) return { follow: { lockKey, flightId: holder } };
    }
    throw new Error('the dedup lock changed hands three times in a row');
  }

  /**
   * Feeds `flight` from another replica's flight until it ends or
   * `flight.stop` is called. False when this replica follows that flight
   * already (for a local flight that dropped the answer's start, or the
   * client would have joined it): nothing is done.
   */
  follow(target: { lockKey: string; flightId: string }, flight: Flight, onStop: (stop: () => void) => void): boolean {
    const streamKey = `${target.lockKey}:${target.flightId}`;
    if (this.#follows.has(streamKey)) return false;
    const follow: Follow = { ...target, streamKey, lastId: '0-0', nextSeq: 1, flight, heardAt: Date.now() };
    this.#follows.set(streamKey, follow);
    onStop(() => this.#follows.delete(streamKey));
    this.#present(follow);
    this.#timer ??= setInterval(() => this.#watch(), Math.max(100, Math.floor(this.#leaseMs / 3))).unref();
    if (!this.#reading) void this.#read();
    return true;
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#reader?.disconnect();
  }

  async #read(): Promise<void> {
    this.#reading = true;
    this.#reader ??= this.#redis.duplicate({ enableOfflineQueue: true });
    this.#reader.on('error', () => {});
    try {
      while (this.#follows.size > 0 && !this.#closed) {
        const follows = [...this.#follows.values()];
        let batch: [string, [string, string[]][]][] | null;
        try {
          batch = (await this.#reader.xread(
            'COUNT',
            1000,
            'BLOCK',
            100,
            'STREAMS',
            ...follows.map((f) => f.streamKey),
            ...follows.map((f) => f.lastId),
          )) as [string, [string, string[]][]][] | null;
        } catch (err) {
          if (this.#closed) return;
          this.#log.warn({ err: (err as Error).message }, 'dedup: reading followed flights from redis failed');
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        for (const [streamKey, entries] of batch ?? []) {
          const follow = this.#follows.get(streamKey);
          for (const [id, fields] of entries) {
            if (!follow || !this.#follows.has(streamKey)) break;
            follow.lastId = id;
            follow.heardAt = Date.now();
            if (!this.#inOrder(follow, id)) break;
            this.#deliver(follow, fields[1] ?? '', fields[3] ?? '');
          }
        }
      }
    } finally {
      this.#reading = false;
    }
  }

  /** Whether entry `id` is the one after the last delivered; if not, what was missed is gone: the follow ends. */
  #inOrder(follow: Follow, id: string): boolean {
    if (id === `0-${follow.nextSeq}`) {
      follow.nextSeq++;
      return true;
    }
    this.#follows.delete(follow.streamKey);
    follow.flight.fail(new JoinedTooLate('the shared answer went on past what Redis keeps of it'));
    return false;
  }

  #deliver(follow: Follow, type: string, data: string): void {
    const flight = follow.flight;
    if (type === 'o') flight.open();
    else if (type === 'e') flight.event(data);
    else if (type === 'c' || type === 'f') {
      this.#follows.delete(follow.streamKey);
      if (type === 'c') {
        if (flight.stream) flight.streamEnd();
        const outcome = JSON.parse(data) as FlightOutcome & { tooLarge?: boolean };
        if (outcome.tooLarge) flight.overflow();
        flight.complete(outcome);
      } else {
        const p = JSON.parse(data) as { status: number; code: string; message: string; type?: string; param?: string };
        flight.fail(new HttpProblem(p.status, p.code, p.message, { ...(p.type ? { type: p.type } : {}), ...(p.param ? { param: p.param } : {}) }));
      }
    }
  }

  /** Each third of a lease: presence refreshed; a flight silent for a lease whose lock is gone is given up. */
  #watch(): void {
    if (this.#follows.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    for (const follow of this.#follows.values()) {
      this.#present(follow);
      if (Date.now() - follow.heardAt > this.#leaseMs) void this.#checkLeader(follow);
    }
  }

  async #checkLeader(follow: Follow): Promise<void> {
    try {
      if ((await this.#redis.get(follow.lockKey)) === follow.flightId) {
        follow.heardAt = Date.now(); // alive, the provider is just slow
        return;
      }
      const last = await this.#redis.xrevrange(follow.streamKey, '+', '-', 'COUNT', 1);
      const type = last[0]?.[1][1];
      if (type === 'c' || type === 'f') return; // ended cleanly: the reader delivers it
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'dedup: checking a leader replica in redis failed');
      if (Date.now() - follow.heardAt < 3 * this.#leaseMs) return;
    }
    if (!this.#follows.delete(follow.streamKey)) return;
    follow.flight.fail(new LeaderLost('the replica answering this request went away'));
  }

  #present(follow: Follow): void {
    this.#redis.set(`${follow.streamKey}:w`, '1', 'PX', this.#leaseMs).catch(() => {});
  }
}

interface Follow {
  lockKey: string;
  flightId: string;
  streamKey: string;
  lastId: string;
  /** The sequence number of the entry expected next (ids are 0-1, 0-2, ...). */
  nextSeq: number;
  flight: Flight;
  /** Date.now() of the last entry read (or of the last check that found the leader alive). */
  heardAt: number;
}

/** Releases or renews a lock only while it holds this flight's id (another replica may hold it by then). */
const IF_HELD = `if redis.call('get', KEYS[1]) == ARGV[1] then
  if ARGV[2] == '0' then return redis.call('del', KEYS[1]) end
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0`;

/** The leader replica's side: appends the flight to its Stream and keeps the lock. */
export class Publisher {
  readonly #redis: Redis;
  readonly #lockKey: string;
  readonly #flightId: string;
  readonly #streamKey: string;
  readonly #leaseMs: number;
  readonly #log: Logger;
  readonly #timer: NodeJS.Timeout;
  /** Most characters of events the Stream keeps (the flight's bound). */
  readonly #windowChars: number;
  /** The last entry's sequence number (its id is 0-<seq>). */
  #seq = 0;
  /** The oldest entry kept, and the lengths of the events kept from there (sizes[i] is entry #first + i's; 0 for others). */
  #first = 1;
  #sizes: number[] = [];
  #sizesHead = 0;
  #windowUsed = 0;
  #done = false;
  #expires = false;

  constructor(redis: Redis, lockKey: string, flightId: string, leaseMs: number, log: Logger, windowChars: number) {
    this.#redis = redis;
    this.#lockKey = lockKey;
    this.#flightId = flightId;
    this.#streamKey = `${lockKey}:${flightId}`;
    this.#leaseMs = leaseMs;
    this.#log = log;
    this.#windowChars = windowChars;
    this.#timer = setInterval(() => this.#renew(), Math.max(100, Math.floor(leaseMs / 3))).unref();
  }

  open(): void {
    this.#add('o', '');
  }

  event(text: string): void {
    this.#add('e', text);
  }

  /** The answer is complete (the lock is kept until release(): the answer is being stored). A non-streamed answer over the window is left out. */
  complete(outcome: FlightOutcome): void {
    const tooLarge = outcome.result !== undefined && outcome.result.length > this.#windowChars;
    this.#add('c', JSON.stringify({ ...outcome, target: undefined, ...(tooLarge ? { result: undefined, tooLarge: true } : {}) }));
  }

  fail(err: unknown): void {
    const p = err instanceof HttpProblem ? err : new HttpProblem(502, 'upstream_error', 'The provider call failed.');
    this.#add('f', JSON.stringify({ status: p.status, code: p.code, message: p.message, type: p.type, param: p.param }));
    this.release();
  }

  /** Whether clients on other replicas still wait for this flight. */
  async othersWaiting(): Promise<boolean> {
    return (await this.#redis.exists(`${this.#streamKey}:w`)) > 0;
  }

  #add(type: string, data: string): void {
    const id = `0-${++this.#seq}`;
    // Past the window, the same command trims the entries before the oldest kept.
    const published = this.#trim(data.length)
      ? this.#redis.xadd(this.#streamKey, 'MINID', `0-${this.#first}`, id, 't', type, 'd', data)
      : this.#redis.xadd(this.#streamKey, id, 't', type, 'd', data);
    // Commands on one connection run in order: entries land in the order they were made.
    published.catch((err: Error) => this.#log.warn({ err: err.message }, 'dedup: publishing to redis failed'));
    if (this.#expires) return;
    // A leader that dies leaves nothing behind for long.
    this.#expires = true;
    this.#redis.pexpire(this.#streamKey, 6 * this.#leaseMs).catch(() => {});
  }

  /** Counts the entry being added (`chars` long); true when older entries must go to keep the window, #first then being the oldest to keep. */
  #trim(chars: number): boolean {
    this.#sizes.push(chars);
    this.#windowUsed += chars;
    if (this.#windowUsed <= this.#windowChars) return false;
    // Drop from the oldest while over the window, always keeping the entry being added.
    while (this.#windowUsed > this.#windowChars && this.#first < this.#seq) {
      this.#windowUsed -= this.#sizes[this.#sizesHead++]!;
      this.#first++;
    }
    if (this.#sizesHead > 1024 && this.#sizesHead * 2 > this.#sizes.length) {
      this.#sizes = this.#sizes.slice(this.#sizesHead);
      this.#sizesHead = 0;
    }
    return true;
  }

  #renew(): void {
    this.#redis.eval(IF_HELD, 1, this.#lockKey, this.#flightId, String(this.#leaseMs)).catch(() => {});
    this.#redis.pexpire(this.#streamKey, 6 * this.#leaseMs).catch(() => {});
  }

  /** Gives up the lock (if still held) and lets the Stream expire. */
  release(): void {
    if (this.#done) return;
    this.#done = true;
    clearInterval(this.#timer);
    // Followers that joined late still read the whole Stream for a while; then it goes.
    this.#redis.pexpire(this.#streamKey, Math.max(60_000, 3 * this.#leaseMs)).catch(() => {});
    this.#redis.eval(IF_HELD, 1, this.#lockKey, this.#flightId, '0').catch(() => {});
  }
}
