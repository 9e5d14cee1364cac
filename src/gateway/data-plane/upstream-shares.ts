import type { HttpProblem } from '../../platform/errors.ts';

/** A call waiting for a connection of its tenant's share, in arrival order. */
interface Waiter {
  admit: () => void;
}

/** One tenant's calls to one origin: those holding a connection of its share, and those waiting for one. */
interface Share {
  active: number;
  /** Made when a first call has to wait (most shares never do). */
  waiting: Waiter[] | undefined;
}

/**
 * Each tenant's share of the upstream connections to one origin
 * (GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT of the origin's pool of
 * GATEWAY_UPSTREAM_CONNECTIONS). The pool is shared by every tenant whose
 * base URL is on that origin (a provider's public API): without a share,
 * one tenant's slow calls held every socket and another's call queued
 * behind them in the pool. A call past its tenant's share waits in its
 * tenant's own queue, first come first served, never in front of another
 * tenant's calls; it leaves the queue when a call of its tenant ends, when
 * its client goes away, or at its deadline (then the caller answers 429).
 * A call holds its part of the share until it has finished: a stream until
 * its last byte was relayed or it was cut or left.
 *
 * Cost per call: one Map read and write under a key of tenant and origin;
 * the entry is deleted when its tenant has no call there, so the map holds
 * only what is in flight. Waiting is the only path that allocates more.
 */
export class UpstreamShares {
  readonly perTenant: number;
  readonly #shares = new Map<string, Share>();

  constructor(perTenant: number) {
    this.perTenant = perTenant;
  }

  /** The map key of a tenant's calls to an origin. */
  static key(tenantId: string, origin: string): string {
    return `${tenantId} ${origin}`;
  }

  /** Takes a part of the share at once if one is free. */
  tryAcquire(key: string): boolean {
    const share = this.#shares.get(key);
    if (share === undefined) {
      this.#shares.set(key, { active: 1, waiting: undefined });
      return true;
    }
    if (share.active >= this.perTenant || (share.waiting?.length ?? 0) > 0) return false;
    share.active++;
    return true;
  }

  /**
   * Waits for a part of the share, behind the tenant's calls that waited
   * first. Rejects with `signal`'s reason when it aborts, and with
   * `expired()` at `deadline` (performance.now() time); either way the call
   * has left the queue and holds nothing.
   */
  wait(key: string, signal: AbortSignal, deadline: number, expired: () => HttpProblem): Promise<void> {
    const share = this.#shares.get(key);
    // Nothing holds the share any more (cannot happen right after a refused tryAcquire, but cheap to be sure of).
    if (share === undefined || (share.active < this.perTenant && (share.waiting?.length ?? 0) === 0)) {
      return this.tryAcquire(key) ? Promise.resolve() : this.wait(key, signal, deadline, expired);
    }
    share.waiting ??= [];
    const waiting = share.waiting;
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const at = waiting.indexOf(waiter);
        if (at !== -1) waiting.splice(at, 1);
        this.#dropIfIdle(key, share);
      };
      const onAbort = () => {
        leave();
        reject(signal.reason);
      };
      const waiter: Waiter = {
        admit: () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(
        () => {
          leave();
          reject(expired());
        },
        Math.max(0, deadline - performance.now()),
      );
      signal.addEventListener('abort', onAbort, { once: true });
      waiting.push(waiter);
    });
  }

  /** Gives back a part of the share: to the tenant's first waiting call if there is one. */
  release(key: string): void {
    const share = this.#shares.get(key);
    if (share === undefined) return;
    const next = share.waiting?.shift();
    if (next !== undefined) {
      next.admit();
      return;
    }
    share.active--;
    this.#dropIfIdle(key, share);
  }

  /** Calls of a tenant to an origin holding a part of its share, and waiting for one (for metrics and tests). */
  inFlight(key: string): { active: number; waiting: number } {
    const share = this.#shares.get(key);
    return { active: share?.active ?? 0, waiting: share?.waiting?.length ?? 0 };
  }

  /** Tenant and origin pairs with calls in flight or waiting. */
  get size(): number {
    return this.#shares.size;
  }

  #dropIfIdle(key: string, share: Share): void {
    if (share.active === 0 && (share.waiting?.length ?? 0) === 0 && this.#shares.get(key) === share) this.#shares.delete(key);
  }
}
