import { concurrencyLimited } from '../../openai-errors.ts';
import type { Stage } from '../call.ts';

/**
 * The tenant's calls in progress on this replica, capped (GATEWAY_TENANT_CONCURRENCY),
 * so that no tenant holds the replica's sockets, memory and upstream
 * connections with calls that never end: past the cap a call is refused at
 * once, before any stage whose work grows with the request. A call counts
 * from here until it has finished, however it finishes (an answer, an
 * error, a stream ended, cut or left by its client), cache hits and dedup
 * followers included: they hold a socket and a reply as any call does.
 * Cost per call: one Map read and write (the entry is deleted at zero, so
 * the map holds only tenants with calls in progress).
 */
export class TenantConcurrency {
  readonly #limit: number;
  readonly #inProgress = new Map<string, number>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Calls of `tenantId` in progress now (for metrics and tests). */
  inProgress(tenantId: string): number {
    return this.#inProgress.get(tenantId) ?? 0;
  }

  /** Tenants with calls in progress now. */
  get tenants(): number {
    return this.#inProgress.size;
  }

  stage(): Stage {
    const counts = this.#inProgress;
    const limit = this.#limit;
    return async function capConcurrency(call, next) {
      const tenantId = call.principal.tenantId;
      const held = counts.get(tenantId) ?? 0;
      if (held >= limit) throw concurrencyLimited(limit);
      counts.set(tenantId, held + 1);
      try {
        await next();
      } finally {
        const left = counts.get(tenantId)! - 1;
        if (left === 0) counts.delete(tenantId);
        else counts.set(tenantId, left);
      }
    };
  }
}
