import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BackgroundWork } from '../platform/background.ts';
import type { Clock } from '../platform/clock.ts';
import type { DialectName } from '../platform/db.ts';
import type { RateLimiter } from '../platform/limits.ts';
import type { OutboxContext } from '../platform/mail.ts';
import type { Metrics } from '../platform/metrics.ts';
import type { AuthConfig } from './config.ts';
import type { AuthDb } from './schema.ts';

/** What the account service's domain functions are handed; nothing is a module-level singleton. */
export interface AuthDeps {
  db: AuthDb;
  dialect: DialectName;
  clock: Clock;
  config: AuthConfig;
  log: Logger;
  metrics: Metrics;
  limiters: {
    register: RateLimiter;
    login: RateLimiter;
    resend: RateLimiter;
    resendPerEmail: RateLimiter;
    forgot: RateLimiter;
    forgotPerEmail: RateLimiter;
  };
  /** Set when REDIS_URL is: state shared by replicas. */
  redis: Redis | undefined;
  /** What enqueueEmail needs: the clock and the key sealing email bodies. */
  outbox: OutboxContext;
  /** Nudges the outbox worker after a commit that queued mail. */
  mailQueued: () => void;
  /** Work a request starts after its reply (a password reset request); close() waits for it. */
  background: BackgroundWork;
}
