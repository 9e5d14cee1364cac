import type { Clock } from '../../platform/clock.ts';

/** `reopened`: a half-open circuit's probe failed (the circuit was never closed in between). */
export type CircuitEvent = 'opened' | 'half_open' | 'reopened' | 'closed' | 'skipped';

interface Circuit {
  provider: string;
  failures: number;
  state: 'closed' | 'open' | 'half_open';
  /** Open: epoch ms from which one probe call is let through. */
  openUntil: number;
  /** Half-open: a probe call is in flight (others still skip). */
  probing: boolean;
}

/** Failing origins remembered at most (a healthy origin holds no entry). */
const MAX_CIRCUITS = 10_000;

/**
 * One circuit per provider origin (provider id and base URL: a tenant's
 * self-hosted server fails on its own), per replica: each replica learns of
 * an outage from its own calls, which takes `failures` calls per replica and
 * needs no shared state on the hot path (docs/gateway-routing.md).
 *
 * Closed: calls pass; `failures` consecutive failures open it. Open: calls
 * skip the provider until `cooldownMs` has passed; then half-open: one probe
 * call passes (the others still skip); its success closes the circuit, its
 * failure opens it for another cooldown, and an outcome that says nothing
 * about the provider (a 400, a client gone) lets the next call probe.
 */
export class CircuitBreakers {
  readonly #circuits = new Map<string, Circuit>();
  readonly #failures: number;
  readonly #cooldownMs: number;
  readonly #clock: Clock;
  readonly #onEvent: (provider: string, event: CircuitEvent) => void;

  constructor(options: { failures: number; cooldownMs: number; clock: Clock; onEvent?: (provider: string, event: CircuitEvent) => void }) {
    this.#failures = options.failures;
    this.#cooldownMs = options.cooldownMs;
    this.#clock = options.clock;
    this.#onEvent = options.onEvent ?? (() => {});
  }

  /** Whether a call to `key` may go now (a half-open circuit admits its one probe). */
  admit(key: string, provider: string): boolean {
    const c = this.#circuits.get(key);
    if (c === undefined || c.state === 'closed') return true;
    if (c.state === 'open' && this.#clock.now() >= c.openUntil) {
      c.state = 'half_open';
      c.probing = false;
      this.#onEvent(provider, 'half_open');
    }
    if (c.state === 'half_open' && !c.probing) {
      c.probing = true;
      return true;
    }
    this.#onEvent(provider, 'skipped');
    return false;
  }

  /** Milliseconds until `key` admits a probe again (0 when it admits calls now). */
  retryInMs(key: string): number {
    const c = this.#circuits.get(key);
    return c?.state === 'open' ? Math.max(0, c.openUntil - this.#clock.now()) : 0;
  }

  success(key: string): void {
    const c = this.#circuits.get(key);
    if (c === undefined) return;
    this.#circuits.delete(key);
    if (c.state !== 'closed') this.#onEvent(c.provider, 'closed');
  }

  failure(key: string, provider: string): void {
    let c = this.#circuits.get(key);
    if (c === undefined) {
      if (this.#circuits.size >= MAX_CIRCUITS) this.#circuits.delete(this.#circuits.keys().next().value!);
      c = { provider, failures: 0, state: 'closed', openUntil: 0, probing: false };
      this.#circuits.set(key, c);
    }
    c.failures++;
    if (c.state === 'half_open' || (c.state === 'closed' && c.failures >= this.#failures)) {
      const event = c.state === 'half_open' ? 'reopened' : 'opened';
      c.state = 'open';
      c.probing = false;
      c.openUntil = this.#clock.now() + this.#cooldownMs;
      this.#onEvent(provider, event);
    }
  }

  /** An outcome that says nothing about the provider: a probe in flight is released. */
  neutral(key: string): void {
    const c = this.#circuits.get(key);
    if (c?.state === 'half_open') c.probing = false;
  }
}
