import { HttpProblem } from '../../platform/errors.ts';
import type { Attempt, Call, CallTarget } from '../pipeline/call.ts';
import { MAX_EVENT_CHARS } from '../providers/sse.ts';
import type { TokenUsage } from '../providers/types.ts';
import type { AnswerEvent, AnswerFormat } from './answer-formats.ts';
import { clientClosed, clientTooSlow, JoinedTooLate, LeaderLost, problemOf } from './flight-errors.ts';
import { type AnswerBody, chargeReuse, nameProducer, sendAnswer } from './replay.ts';

/** How the shared upstream call ended, copied onto every client's call. */
export interface FlightOutcome {
  status: number;
  errorCode: string | undefined;
  usage: TokenUsage | undefined;
  costUsd: number | undefined;
  /** The provider (id) and model (as it named itself) that answered. */
  provider: string | undefined;
  modelUsed: string | undefined;
  /** This replica's target object (undefined when the call ran on another replica). */
  target?: CallTarget | undefined;
  attempts: Attempt[];
  /** Routing's reason as the attempts left it (a fallback adds to it). */
  routeReason: string | undefined;
  /** What the gateway's prompt-cache hints, compaction and routing saved the call, USD (the paying client's record keeps them). */
  promptCacheSaved: number;
  compactionSaved: number;
  routingSaved: number;
  /** What the provider's own prompt caching saved the call, USD (likewise: the payer's; a dedup paid nothing, so saved nothing by it). */
  providerCacheSaved: number;
  /** A non-streamed answer's chat.completion. */
  result: string | undefined;
}

export { JoinedTooLate, LeaderLost, leaderLost } from './flight-errors.ts';

interface Subscriber {
  call: Call;
  joinedAt: number;
  /** This client's stream head is written: from now on it can only be told things inside the stream. */
  opened: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
  detach: () => void;
}

/**
 * One upstream call shared by every client that asked the same question
 * while it ran (in-flight dedup). Its source (the leader's own call, or
 * another replica's through Redis) feeds it the answer: `open`, `event`
 * for each SSE event, `streamEnd`, then `complete` or `fail`. The leader,
 * the client whose call is upstream, reads its answer directly (`lead`);
 * every other client is a subscriber: a streaming client gets the events
 * as they arrive, a late one first what it missed; a non-streaming one (or
 * one streaming from a non-streamed call) the whole answer at the end.
 * Clients leaving, the leader included, never stop the others; `onEmpty`
 * is told when none is left.
 *
 * One client pays: the leader if it is still connected when the usage is
 * known, else the first subscriber still connected (its record says
 * `miss`); the others are `dedup` (cost 0, the answer's cost saved). On a
 * follower replica (`local` false) every client is `dedup`.
 *
 * What it holds is bounded by `maxHeld` (characters of chunk data: the
 * tenant's cache entry limit, past which the answer could not be stored
 * anyway): once an answer passes it, its chunks are dropped (`overflowed`):
 * the answer is not stored, clients whose stream is open go on receiving it
 * live, and clients waiting for it whole (and any that come later) are
 * told JoinedTooLate and make their own call. A subscriber whose socket
 * holds more than `maxHeld` plus one event of unsent data is cut off
 * (client_too_slow) rather than buffered for.
 */
export class Flight {
  readonly key: string;
  /** The upstream call is streamed. */
  readonly stream: boolean;
  /** The surface's answers (its key's version keeps every client of a flight on the same surface). */
  readonly format: AnswerFormat;
  local = true;
  /** Most characters of chunk data held (see the class comment). */
  readonly maxHeld: number;
  /** The chunks so far (data strings), without the usage-only chunk; emptied once overflowed. */
  #chunks: string[] = [];
  #held = 0;
  #overflowed = false;
  usageChunk: string | undefined;
  #freeUsageChunk: string | undefined;
  #doneEvent = false;
  #errorEvent: string | undefined;
  #streamError: HttpProblem | undefined;
  #opened = false;
  #ended = false;
  outcome: FlightOutcome | undefined;
  failure: unknown;
  #subs: Subscriber[] = [];
  /** The leader is still connected (it pays, and its leaving alone does not empty the flight). */
  #leaderPresent = false;
  #payer: Subscriber | undefined;
  #payerChosen = false;
  /** Set once nobody is left and the source was told to stop: new clients start a new flight. */
  abandoned = false;
  /** Stops the source (aborts the upstream call, or stops following another replica's). */
  stop: (() => void) | undefined;
  /** Leader with Redis: releases the lock (once the answer is stored). */
  release: (() => void) | undefined;
  /** Leader with Redis: whether clients on other replicas still wait. */
  othersWaiting: (() => Promise<boolean>) | undefined;
  readonly #onEmpty: (flight: Flight) => void;
  readonly #onFinish: (flight: Flight) => void;

  constructor(
    key: string,
    stream: boolean,
    format: AnswerFormat,
    maxHeld: number,
    hooks: { onEmpty: (flight: Flight) => void; onFinish: (flight: Flight) => void },
  ) {
    this.key = key;
    this.stream = stream;
    this.format = format;
    this.maxHeld = maxHeld;
    this.#onEmpty = hooks.onEmpty;
    this.#onFinish = hooks.onFinish;
  }

  get finished(): boolean {
    return this.outcome !== undefined || this.failure !== undefined;
  }

  get subscribers(): number {
    return this.#subs.length;
  }

  /** The answer passed `maxHeld`: its start is gone, no client can join it any more. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  /** The payer is chosen and it is the leader (a subscriber chosen instead pays in its place). */
  get leaderPays(): boolean {
    return this.#payerChosen && this.local && this.#payer === undefined;
  }

  /** The leader's client is still connected. */
  get leaderPresent(): boolean {
    return this.#leaderPresent;
  }

  /** The leader's own call is upstream; its client leaving (leaderLeft) stops that call only when no one else waits. */
  lead(): void {
    this.#leaderPresent = true;
  }

  /** The leader's client left (its call's onClientClose while it leads). */
  readonly leaderLeft = (): void => {
    if (!this.#leaderPresent) return;
    this.#leaderPresent = false;
    if (this.#subs.length === 0 && !this.finished) this.#onEmpty(this);
  };

  /** The streamed answer completed cleanly (its terminal event, no error event): it may be stored. */
  get storable(): boolean {
    if (this.#overflowed) return false;
    return this.stream ? this.#doneEvent && this.#errorEvent === undefined : this.outcome?.result !== undefined;
  }

  /** The answer as recorded, for the store and for clients served at the end (only while storable). */
  answer(): AnswerBody {
    return this.stream ? { chunks: this.#chunks, usageChunk: this.usageChunk } : { completion: this.outcome?.result ?? '{}' };
  }

  /** Waits for the answer on behalf of `call` (status dedup, unless it ends up paying). */
  join(call: Call): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.#overflowed) return Promise.reject(new JoinedTooLate());
    if (call.signal.aborted) return Promise.reject(clientClosed());
    call.cacheStatus = 'dedup';
    return new Promise<void>((resolve, reject) => {
      const sub: Subscriber = { call, joinedAt: performance.now(), opened: false, resolve, reject, detach: () => {} };
      if (this.outcome) {
        this.#settle(sub);
        return;
      }
      const onAbort = () => this.#leave(sub);
      call.signal.addEventListener('abort', onAbort, { once: true });
      sub.detach = () => call.signal.removeEventListener('abort', onAbort);
      this.#subs.push(sub);
      if (this.#opened && call.stream) this.#openFor(sub);
    });
  }

  /** The source turned out to be another replica's call: nobody here pays. */
  follow(): void {
    this.local = false;
    for (const sub of this.#subs) sub.call.cacheStatus = 'dedup';
  }

  open(): void {
    this.#opened = true;
    for (const sub of this.#subs) if (sub.call.stream) this.#openFor(sub);
  }

  /** One complete SSE event of the answer, as the adapter wrote it; returns its kind. */
  event(text: string): AnswerEvent['kind'] {
    const event = this.format.classify(text);
    if (event.kind === 'done') this.#doneEvent = true;
    else if (event.kind === 'error') {
      this.#errorEvent = text;
      this.#streamError = event.problem;
    } else if (event.kind === 'usage') {
      this.usageChunk = event.data;
      if (event.terminal) this.#doneEvent = true;
      for (let i = this.#subs.length - 1; i >= 0; i--) {
        const sub = this.#subs[i]!;
        if (sub.opened && sub.call.includeUsage) {
          sub.call.usageChunkSent = this.#usageFor(sub);
          this.#write(sub, this.format.chunkEvent(sub.call.usageChunkSent));
        }
      }
      return event.kind;
    } else if (!this.#overflowed) {
      this.#held += event.data.length;
      if (this.#held <= this.maxHeld) this.#chunks.push(event.data);
      else this.overflow();
    }
    // Backwards: a subscriber cut off for being slow leaves the list.
    for (let i = this.#subs.length - 1; i >= 0; i--) {
      const sub = this.#subs[i]!;
      if (sub.opened) this.#write(sub, text);
    }
    return event.kind;
  }

  /**
   * Drops the chunks held: the answer passed `maxHeld` (or, on a follower
   * replica, is too large to be shared whole). Clients not yet receiving it
   * live make their own call; those whose stream is open go on.
   */
  overflow(): void {
    if (this.#overflowed) return;
    this.#overflowed = true;
    this.#chunks = [];
    const waiting = this.#subs.filter((sub) => !sub.opened);
    if (waiting.length === 0) return;
    this.#subs = this.#subs.filter((sub) => sub.opened);
    for (const sub of waiting) {
      sub.detach();
      sub.reject(new JoinedTooLate());
    }
    if (this.#subs.length === 0 && !this.#leaderPresent && !this.finished) this.#onEmpty(this);
  }

  streamEnd(): void {
    this.#ended = true;
    for (const sub of this.#subs) if (sub.opened && !sub.call.response.destroyed) sub.call.response.end();
  }

  complete(outcome: FlightOutcome): void {
    this.outcome = outcome;
    this.#choosePayer();
    const subs = this.#subs;
    this.#subs = [];
    for (const sub of subs) this.#settle(sub);
    this.#onFinish(this);
  }

  /** The call failed: every client gets the same error (in the stream for those whose stream is open). */
  fail(err: unknown): void {
    this.failure = err;
    const subs = this.#subs;
    this.#subs = [];
    const problem = problemOf(err);
    for (const sub of subs) {
      sub.detach();
      sub.call.status = problem.status;
      sub.call.errorCode = problem.code;
      if (!sub.opened) {
        sub.reject(err instanceof LeaderLost || err instanceof JoinedTooLate ? err : problem);
        continue;
      }
      if (!this.#ended && !sub.call.response.destroyed) sub.call.response.end(this.format.errorEvent(problem));
      sub.resolve();
    }
    this.#onFinish(this);
  }

  #openFor(sub: Subscriber): void {
    sub.call.upstreamMs = performance.now() - sub.joinedAt;
    sub.call.openStream();
    sub.opened = true;
    let backlog = '';
    const format = this.format;
    for (const chunk of this.#chunks) backlog += format.chunkEvent(chunk);
    if (this.usageChunk !== undefined && sub.call.includeUsage) {
      sub.call.usageChunkSent = this.#usageFor(sub);
      backlog += format.chunkEvent(sub.call.usageChunkSent);
    }
    if (this.#errorEvent !== undefined) backlog += this.#errorEvent;
    if (this.#doneEvent) backlog += format.done;
    if (backlog) this.#write(sub, backlog);
    if (this.#ended && !sub.call.response.destroyed) sub.call.response.end();
  }

  /** The usage chunk as this client is charged: as is for the payer, `cost` 0 for the others. */
  #usageFor(sub: Subscriber): string {
    const usage = this.usageChunk!;
    if (sub === this.#choosePayer()) return usage;
    this.#freeUsageChunk ??= usage.includes('"cost"') ? this.format.withCost(usage, 0) : usage;
    return this.#freeUsageChunk;
  }

  /** The subscriber who pays, if one does (undefined: the leader pays, or, following another replica, no one here). */
  #choosePayer(): Subscriber | undefined {
    if (!this.#payerChosen && this.local) {
      this.#payerChosen = true;
      this.#payer = this.#leaderPresent ? undefined : this.#subs[0];
    }
    return this.#payer;
  }

  #settle(sub: Subscriber): void {
    sub.detach();
    const o = this.outcome!;
    const call = sub.call;
    call.upstreamMs = performance.now() - sub.joinedAt;
    call.attempts = o.attempts.slice();
    if (o.routeReason !== undefined) call.routeReason = o.routeReason;
    call.status = o.status;
    call.errorCode = o.errorCode;
    if (o.target) call.target = o.target;
    const pays = sub === this.#payer;
    if (pays) {
      call.cacheStatus = 'miss';
      call.usage = o.usage;
      call.costUsd = o.costUsd;
      call.modelUsed = o.modelUsed;
      call.saved.promptCache = o.promptCacheSaved;
      call.saved.compaction = o.compactionSaved;
      call.saved.routing = o.routingSaved;
      call.providerCacheSaved = o.providerCacheSaved;
    } else {
      call.cacheStatus = 'dedup';
      chargeReuse(call, { provider: o.provider ?? call.target?.provider.id ?? '', model: o.modelUsed, usage: o.usage, costUsd: o.costUsd });
    }
    if (o.provider !== undefined && !o.target) nameProducer(call, o.provider, o.modelUsed);
    if (sub.opened) {
      sub.resolve();
      return;
    }
    if (this.#overflowed && o.status < 400) {
      sub.reject(new JoinedTooLate());
      return;
    }
    if (o.status >= 400 || !this.storable) {
      sub.reject(this.#streamError ?? new HttpProblem(o.status >= 400 ? o.status : 502, o.errorCode ?? 'upstream_error', 'The provider did not complete the answer.'));
      return;
    }
    sendAnswer(call, this.answer(), pays ? o.costUsd : o.costUsd === undefined ? undefined : 0);
    sub.resolve();
  }

  /** A client went away: it stops waiting; the call goes on for the others. */
  #leave(sub: Subscriber): void {
    this.#drop(sub, 499, 'client_closed_request');
  }

  /** Takes `sub` off the flight with the status its record gets; false if it had left already. */
  #drop(sub: Subscriber, status: number, code: string): boolean {
    const at = this.#subs.indexOf(sub);
    if (at === -1) return false;
    this.#subs.splice(at, 1);
    // A payer leaving before the answer completes pays nothing: another is chosen then (or the leader pays after all).
    if (sub === this.#payer && !this.finished) {
      this.#payer = undefined;
      this.#payerChosen = false;
    }
    sub.detach();
    sub.call.status = status;
    sub.call.errorCode = code;
    if (sub.opened) sub.resolve();
    else sub.reject(clientClosed());
    if (this.#subs.length === 0 && !this.#leaderPresent && !this.finished) this.#onEmpty(this);
    return true;
  }

  /**
   * Writes to a subscriber's open stream. Nothing waits for its socket (a
   * slow client must not slow the others), so one that holds more unsent
   * data than the backlog it may be sent plus one event is cut off: its
   * stream ends with client_too_slow, and it is destroyed if it still has
   * not taken that in a while.
   */
  #write(sub: Subscriber, text: string): void {
    const out = sub.call.response;
    if (out.destroyed || out.writableEnded) return;
    out.write(text);
    if (out.writableLength <= this.maxHeld + MAX_EVENT_CHARS) return;
    const problem = clientTooSlow();
    if (!this.#drop(sub, problem.status, problem.code)) return;
    out.end(this.format.errorEvent(problem));
    setTimeout(() => out.destroy(), SLOW_CLIENT_GRACE_MS).unref();
  }
}

/** How long a client cut off for reading too slowly has to take in the rest of its stream before its socket is closed. */
const SLOW_CLIENT_GRACE_MS = 30_000;
