import { type Migration, sql } from 'kysely';
import type { AnyDb, DialectName } from './db.ts';
import type { Logger } from 'pino';
import type { Clock } from './clock.ts';


/** Table `job_runs`: one row per periodic job, the time its last tick was claimed. */
export const jobRunsMigration: Migration = {
  async up(db) {
    await db.schema
      .createTable('job_runs')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('last_run_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};

export interface PeriodicJob {
  /** Runs the job now if this process wins the tick; true when it ran. */
  runOnce(): Promise<boolean>;
  start(): void;
  stop(): Promise<void>;
}

interface JobOptions {
  name: string;
  intervalMs: number;
  db: AnyDb;
  dialect: DialectName;
  clock: Clock;
  log: Logger;
  run: () => Promise<void>;
}

/**
 * A job that runs every `intervalMs` on exactly one replica per tick (see
 * claimTick); on PostgreSQL the run also holds an advisory lock, so a slow
 * run never overlaps the next one.
 */
export function periodicJob(options: JobOptions): PeriodicJob {
  const { name, intervalMs, db, dialect, clock, log } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;

  /**
   * Claims the current tick: the interval-long window of wall-clock time that
   * `now` falls in. Whichever replica fires first in a window claims it with
   * one conditional UPDATE; the others find it taken, whatever the phase of
   * their timers.
   */
  async function claimTick(db: AnyDb): Promise<boolean> {
    const now = clock.now();
    const windowStart = now - (now % intervalMs);
    await db
      .insertInto('job_runs')
      .values({ name, last_run_at: 0 })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const res = await db
      .updateTable('job_runs')
      .set({ last_run_at: now })
      .where('name', '=', name)
      .where('last_run_at', '<', windowStart)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async function runClaimed(claimOn: AnyDb): Promise<boolean> {
    if (!(await claimTick(claimOn))) return false;
    const started = clock.now();
    await options.run();
    log.debug({ job: name, ms: clock.now() - started }, 'job ran');
    return true;
  }

  async function runOnce(): Promise<boolean> {
    if (dialect !== 'postgres') return runClaimed(db);
    return db.connection().execute(async (conn) => {
      // Advisory locks are per database; the schema in the key keeps deployments in other schemas apart.
      const key = sql`hashtext(current_schema() || ${`:job:${name}`})`;
      const { rows } = await sql<{ ok: boolean }>`select pg_try_advisory_lock(${key}) as ok`.execute(conn);
      if (!rows[0]?.ok) return false;
      try {
        // The claim uses the lock's connection, so a job needs one pooled connection beyond its own work.
        return await runClaimed(conn);
      } finally {
        await sql`select pg_advisory_unlock(${key})`.execute(conn);
      }
    });
  }

  function schedule(delay: number): void {
    timer = setTimeout(() => {
      running = runOnce()
        .catch((err: unknown) => log.error({ err, job: name }, 'job failed'))
        .finally(() => {
          running = undefined;
          if (timer) schedule(intervalMs);
        });
    }, delay);
    timer.unref();
  }

  return {
    runOnce,
    start: () => schedule(Math.min(intervalMs, 5_000)),
    async stop() {
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
