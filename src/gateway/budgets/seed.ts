import { sql } from 'kysely';
import type { GatewayDb } from '../schema.ts';
import type { CounterSpec, SeedCounter } from './ledger.ts';

/**
 * What a tokens or USD counter starts its window with: the sum of the
 * usage records since the window began (a key's own, or all of its
 * tenant's), cache hits and dedups left out as the stage settles them at 0.
 * This is what keeps a single-process gateway's day and month from
 * starting over on a restart, and what a limit set in the middle of a
 * month starts from. Records still in the usage writer's queue (the last
 * second or so) are not in the table yet and are not seen.
 */
export function seedFromUsage(db: GatewayDb): SeedCounter {
  return async (counter: CounterSpec) => {
    const total =
      counter.kind === 'usd' ? sql<number>`coalesce(sum(cost_usd), 0)` : sql<number>`coalesce(sum(prompt_tokens + completion_tokens), 0)`;
    let query = db
      .selectFrom('usage_records')
      .select(total.as('spent'))
      .where('tenant_id', '=', counter.tenantId)
      .where('created_at', '>=', counter.window.start)
      .where('cache_status', 'not in', ['hit', 'dedup']);
    if (counter.keyId !== undefined) query = query.where('key_id', '=', counter.keyId);
    const row = await query.executeTakeFirstOrThrow();
    return Number(row.spent);
  };
}
