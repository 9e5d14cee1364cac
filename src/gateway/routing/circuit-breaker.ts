import type { Clock } from '../../platform/clock.ts';

/** `reopened`: a half-open circuit's probe failed (the circuit was never closed in between). */
export type CircuitEvent = 'opened' | 'half_open' | 'reopened' | 'closed' | 'skipped';

/** Which circuit an event is about: a tenant's own (tenant, provider, base URL, key) or a provider origin's, shared. */
export type CircuitScope = 'tenant' | 'shared';

/**
 * The two circuits one call passes: its own (`own`: tenant, provider, full
 * base URL and a hash of the provider key, routing/circuit-keys.ts) and the
 * provider origin's (`origin`: provider and scheme://host:port), built once
 * per tenant and provider key, not per call.
 */
export interface CircuitKeys {
  readonly own: string;
  readonly origin: string;
  readonly tenantId: string;
  readonly provider: string;
}

/** What a failure counts against (routing/retry.ts decides): the call's own circuit, or its own and the origin's. */
export type Blame = 'own' | 'origin';

interface OwnCircuit {
  provider: string;
  failures: number;
  state: 'closed' | 'open' | 'half_open';
  /** Open: epoch ms from which one probe call is let through. */
  openUntil: number;
  /** Half-open: a probe call is in flight (others still skip). */
  probing: boolean;
}

interface SharedCircuit {
  provider: string;
  state: 'closed' | 'open';
  /** Closed: failures of the origin's own since the last success on it, within the window. */
  failures: number;
  /** Closed: epoch ms of the first of those failures (the window starts there). */
  since: number;
  /** Closed: the distinct tenants among them, at most `sharedTenants` remembered. */
  tenants: string[];
  /** Open: epoch ms until which every call to the origin is skipped. */
  openUntil: number;
}

/** Circuits remembered at most, each kind (a healthy circuit holds no entry). */
export const MAX_CIRCUITS = 10_000;

export interface CircuitOptions {
  /** GATEWAY_BREAKER_FAILURES: consecutive failures that open a circuit. */
  failures: number;
  /** GATEWAY_BREAKER_COOLDOWN_MS: how long an open circuit skips its calls. */
  cooldownMs: number;
  /** GATEWAY_BREAKER_SHARED_TENANTS: distinct tenants whose failures it takes to open an origin's shared circuit. */
  sharedTenants: number;
  /** GATEWAY_BREAKER_SHARED_WINDOW_MS: the failures that open a shared circuit fall within this long. */
  sharedWindowMs: number;
  clock: Clock;
  onEvent?: (provider: string, event: CircuitEvent, scope: CircuitScope) => void;
  /** Entries kept at most, each kind (tests lower it). */
  maxCircuits?: number;
}

/**
 * Circuit breakers, per replica: each replica learns of an outage from its
 * own calls, with no shared state on the hot path (docs/gateway-routing.md).
 * Two kinds, so that one tenant cannot open a circuit for another:
 *
 * - A tenant's own circuit (tenant, provider, full base URL, provider key):
 *   closed, calls pass and `failures` consecutive failures open it; open,
 *   that tenant's calls skip the target until `cooldownMs` has passed; then
 *   half-open: one probe call passes (the others still skip); its success
 *   closes the circuit, its failure opens it for another cooldown, and an
 *   outcome that says nothing about the upstream (a 400, a client gone)
 *   lets the next call probe.
 * - An origin's shared circuit (provider, scheme://host:port), for an
 *   outage of the origin itself: only failures that are the origin's count
 *   (connect errors, timeouts, 5xx: `Blame` 'origin'), and it opens only
 *   when `failures` of them came from at least `sharedTenants` distinct
 *   tenants within `sharedWindowMs`, with no success on the origin in
 *   between (any tenant's success there starts the count again: an origin
 *   that answers others is not down). Open, every tenant's calls to the
 *   origin skip it for `cooldownMs`; then it closes and has to be opened
 *   again the same way (no single probe: one tenant's failing probe must
 *   not keep it open for everyone).
 *
 * Memory: at most `maxCircuits` entries of each kind (the oldest forgotten
 * first, which closes it: failing open), each shared entry holding at most
 * `sharedTenants` tenant ids. Every operation is a map lookup and, for the
 * shared circuit, a scan of at most `sharedTenants` ids.
 */
export class CircuitBreakers {
  readonly #own = new Map<string, OwnCircuit>();
  readonly #shared = new Map<string, SharedCircuit>();
  readonly #failures: number;
  readonly #cooldownMs: number;
  readonly #sharedTenants: number;
  readonly #sharedWindowMs: number;
  readonly #max: number;
  readonly #clock: Clock;
  readonly #onEvent: (provider: string, event: CircuitEvent, scope: CircuitScope) => void;

  constructor(options: CircuitOptions) {
    this.#failures = options.failures;
    this.#cooldownMs = options.cooldownMs;
    this.#sharedTenants = options.sharedTenants;
    this.#sharedWindowMs = options.sharedWindowMs;
    this.#max = options.maxCircuits ?? MAX_CIRCUITS;
    this.#clock = options.clock;
    this.#onEvent = options.onEvent ?? (() => {});
  }

  /** Whether a call may go now: the origin's circuit is not open, and its own admits it (a half-open one admits its one probe). */
  admit(keys: CircuitKeys): boolean {
    const s = this.#shared.get(keys.origin);
    if (s !== undefined && s.state === 'open') {
      if (this.#clock.now() < s.openUntil) {
        this.#onEvent(keys.provider, 'skipped', 'shared');
        return false;
      }
      this.#shared.delete(keys.origin);
      this.#onEvent(s.provider, 'closed', 'shared');
    }
    const c = this.#own.get(keys.own);
    if (c === undefined || c.state === 'closed') return true;
    if (c.state === 'open' && this.#clock.now() >= c.openUntil) {
      c.state = 'half_open';
      c.probing = false;
      this.#onEvent(c.provider, 'half_open', 'tenant');
    }
    if (c.state === 'half_open' && !c.probing) {
      c.probing = true;
      return true;
    }
    this.#onEvent(keys.provider, 'skipped', 'tenant');
    return false;
  }

  /** Milliseconds until a call with these keys may go again (0 when it may now). */
  retryInMs(keys: CircuitKeys): number {
    const now = this.#clock.now();
    const c = this.#own.get(keys.own);
    const s = this.#shared.get(keys.origin);
    const own = c?.state === 'open' ? c.openUntil - now : 0;
    const shared = s?.state === 'open' ? s.openUntil - now : 0;
    return Math.max(0, own, shared);
  }

  /** The upstream answered: the call's own circuit closes, and the origin's count starts again. */
  success(keys: CircuitKeys): void {
    const c = this.#own.get(keys.own);
    if (c !== undefined) {
      this.#own.delete(keys.own);
      if (c.state !== 'closed') this.#onEvent(c.provider, 'closed', 'tenant');
    }
    const s = this.#shared.get(keys.origin);
    if (s !== undefined) {
      this.#shared.delete(keys.origin);
      if (s.state === 'open') this.#onEvent(s.provider, 'closed', 'shared');
    }
  }

  /** A failure of the upstream: always the call's own circuit; the origin's too when `blame` is 'origin'. */
  failure(keys: CircuitKeys, blame: Blame): void {
    this.#ownFailure(keys);
    if (blame === 'origin') this.#originFailure(keys);
  }

  /** An outcome that says nothing about the upstream: a probe in flight is released. */
  neutral(keys: CircuitKeys): void {
    const c = this.#own.get(keys.own);
    if (c?.state === 'half_open') c.probing = false;
  }

  /** Circuits skipping calls now (open within their cooldown, or half-open with a probe out), by provider and scope: for the gauge. */
  openCounts(): Map<string, { provider: string; scope: CircuitScope; count: number }> {
    const now = this.#clock.now();
    const counts = new Map<string, { provider: string; scope: CircuitScope; count: number }>();
    const add = (provider: string, scope: CircuitScope) => {
      const key = `${provider} ${scope}`;
      const found = counts.get(key);
      if (found) found.count++;
      else counts.set(key, { provider, scope, count: 1 });
    };
    for (const c of this.#own.values()) if ((c.state === 'open' && now < c.openUntil) || (c.state === 'half_open' && c.probing)) add(c.provider, 'tenant');
    for (const s of this.#shared.values()) if (s.state === 'open' && now < s.openUntil) add(s.provider, 'shared');
    return counts;
  }

  #ownFailure(keys: CircuitKeys): void {
    let c = this.#own.get(keys.own);
    if (c === undefined) {
      if (this.#own.size >= this.#max) this.#own.delete(this.#own.keys().next().value!);
      c = { provider: keys.provider, failures: 0, state: 'closed', openUntil: 0, probing: false };
      this.#own.set(keys.own, c);
    }
    c.failures++;
    if (c.state === 'half_open' || (c.state === 'closed' && c.failures >= this.#failures)) {
      const event = c.state === 'half_open' ? 'reopened' : 'opened';
      c.state = 'open';
      c.probing = false;
      c.openUntil = this.#clock.now() + this.#cooldownMs;
      this.#onEvent(keys.provider, event, 'tenant');
    }
  }

  #originFailure(keys: CircuitKeys): void {
    const now = this.#clock.now();
    let s = this.#shared.get(keys.origin);
    if (s === undefined) {
      if (this.#shared.size >= this.#max) this.#shared.delete(this.#shared.keys().next().value!);
      s = { provider: keys.provider, state: 'closed', failures: 0, since: now, tenants: [], openUntil: 0 };
      this.#shared.set(keys.origin, s);
    }
    if (s.state === 'open') return; // a call admitted before it opened
    if (now - s.since > this.#sharedWindowMs) {
      s.failures = 0;
      s.since = now;
      s.tenants.length = 0;
    }
    s.failures++;
    if (s.tenants.length < this.#sharedTenants && !s.tenants.includes(keys.tenantId)) s.tenants.push(keys.tenantId);
    if (s.failures >= this.#failures && s.tenants.length >= this.#sharedTenants) {
      s.state = 'open';
      s.openUntil = now + this.#cooldownMs;
      s.tenants = [];
      this.#onEvent(keys.provider, 'opened', 'shared');
    }
  }
}
