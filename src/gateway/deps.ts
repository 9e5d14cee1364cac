import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BackgroundWork } from '../platform/background.ts';
import type { Clock } from '../platform/clock.ts';
import type { DialectName } from '../platform/db.ts';
import type { RateLimiter } from '../platform/limits.ts';
import type { OutboxContext } from '../platform/mail.ts';
import type { Metrics } from '../platform/metrics.ts';
import type { BudgetLedger } from './budgets/ledger.ts';
import type { GatewayConfig } from './config.ts';
import type { UpstreamPools } from './data-plane/upstream-pools.ts';
import type { GatewayDb } from './schema.ts';

/** What the gateway's control-plane domain functions are handed; nothing is a module-level singleton. */
export interface GatewayDeps {
  db: GatewayDb;
  dialect: DialectName;
  clock: Clock;
  config: GatewayConfig;
  log: Logger;
  metrics: Metrics;
  limiters: {
    signup: RateLimiter;
    magicLink: RateLimiter;
    magicLinkPerEmail: RateLimiter;
    verify: RateLimiter;
    /** Per workspace (its tenant id). */
    apiKeyCreate: RateLimiter;
    providerKeys: RateLimiter;
  };
  /** Set when REDIS_URL is: state shared by replicas (rate limits, API-key revocations). */
  redis: Redis | undefined;
  /** What enqueueEmail needs: the clock and the key sealing email bodies. */
  outbox: OutboxContext;
  /** Nudges the outbox worker after a commit that queued mail. */
  mailQueued: () => void;
  /**
   * Called after the commit that revoked an API key (and again on a repeated
   * revoke): drops the key from every replica's in-process key cache, so the
   * very next request with it is refused.
   */
  apiKeyRevoked: (keyHash: string) => Promise<void>;
  /** Called after a tenant's provider key was stored, replaced or deleted, or its settings changed: drops the cached tenant on every replica. */
  tenantChanged: (tenantId: string) => Promise<void>;
  /** The data plane's budget ledger: GET /api/v1/tenant/limits reads current consumption from it. */
  budgets: BudgetLedger;
  /** The data plane's upstream pools (SSRF-safe connector, keep-alive): the console's provider-key test uses them. */
  upstream: UpstreamPools;
  /**
   * Work a request starts after its reply (the magic-link email, so that the
   * reply's timing does not tell whether the address has a tenant); close() waits for it.
   */
  background: BackgroundWork;
}
