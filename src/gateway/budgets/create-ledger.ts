import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.ts';
import type { GatewayDb } from '../schema.ts';
import type { BudgetLedger } from './ledger.ts';
import { MemoryLedger } from './memory-ledger.ts';
import { RedisLedger } from './redis-ledger.ts';
import { seedFromUsage } from './seed.ts';

/** The budget ledger of this process: shared through Redis when there is one (with the in-process ledger as its fallback), else in process. */
export function createBudgetLedger(options: { db: GatewayDb; redis: Redis | undefined; clock: Clock; log: Logger; reservationTtlMs: number }): BudgetLedger {
  const seed = seedFromUsage(options.db);
  const memory = new MemoryLedger(seed);
  if (!options.redis) return memory;
  return new RedisLedger({ redis: options.redis, insurance: memory, seed, clock: options.clock, log: options.log, reservationTtlMs: options.reservationTtlMs });
}
