import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Kysely, Migration } from 'kysely';
import pino, { type Logger } from 'pino';
import { Type } from 'typebox';
import { createHttpApp } from '../../src/platform/http.ts';
import { jobRunsMigration } from '../../src/platform/jobs.ts';
import { enqueueEmail, outboxMigration, type OutboxTable } from '../../src/platform/mail.ts';
import { createServiceRuntime, type RuntimeOverrides, type RuntimeSettings, type ServiceCore, type ServiceRuntime } from '../../src/platform/runtime.ts';
import type { TestDatabase } from './database.ts';

/** The fixture service's one table of its own, beside the platform's (job_runs, outbox). */
export interface FixtureTables {
  notes: { id: string; text: string };
  outbox: OutboxTable;
  job_runs: { name: string; last_run_at: number };
}

/** A service's migrations, the platform's tables among them. */
export const fixtureMigrations: Record<string, Migration> = {
  '0001_job_runs': jobRunsMigration,
  '0002_outbox': outboxMigration,
  '0003_notes': {
    async up(db) {
      await db.schema
        .createTable('notes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('text', 'text', (c) => c.notNull())
        .execute();
    },
  },
};

export interface FixtureDeps extends ServiceCore<FixtureTables> {
  /** Runs of the `fixture:tick` job. */
  ticks: number;
}

export type FixtureService = ServiceRuntime<FixtureDeps>;

/** Settings as a service's config would give them, on `database`. */
export function fixtureSettings(database: TestDatabase, more: Partial<RuntimeSettings> = {}): RuntimeSettings {
  return {
    production: false,
    logLevel: 'silent',
    databaseUrl: database.url,
    sqlitePath: join(database.dataDir, 'fixture.sqlite'),
    redisUrl: undefined,
    smtp: undefined,
    mail: { from: 'Fixture <fixture@example.com>', pollMs: 50, maxAttempts: 3, backoffBaseMs: 1000, backoffCapMs: 60_000 },
    encryptionKey: randomBytes(32),
    ...more,
  };
}

/**
 * A service on the platform's runtime and nothing else: POST /notes writes a
 * note and queues an email about it in one transaction; POST /notes/later
 * writes its note in background work after a delay; two jobs, one enabled.
 */
export function createFixtureService(settings: RuntimeSettings, overrides: RuntimeOverrides = { processMetrics: false }): Promise<FixtureService> {
  return createServiceRuntime<FixtureTables, FixtureDeps>({
    name: 'fixture',
    settings,
    migrations: fixtureMigrations,
    overrides,
    deps: (core) => ({ ...core, ticks: 0 }),
    jobs: (deps) => [
      {
        name: 'fixture:tick',
        intervalMs: 60_000,
        run: async () => {
          deps.ticks++;
        },
      },
      { name: 'fixture:off', intervalMs: 60_000, enabled: false, run: async () => {} },
    ],
    buildApp: async (deps) => {
      const app = await createHttpApp({
        logger: deps.log,
        metrics: deps.metrics,
        bodyLimit: 1024,
        trustProxy: false,
        title: 'Fixture',
        version: '0',
      });
      const note = { body: Type.Object({ id: Type.String(), text: Type.String(), to: Type.Optional(Type.String()) }) };
      app.post('/notes', { schema: note }, async (request, reply) => {
        const { id, text, to } = request.body;
        await deps.db.transaction().execute(async (trx) => {
          await trx.insertInto('notes').values({ id, text }).execute();
          if (to) await enqueueEmail(trx as Kysely<FixtureTables>, deps.outbox, { kind: 'note', to, subject: `Note ${id}`, text });
        });
        deps.mailQueued();
        return reply.status(201).send({ id });
      });
      app.post('/notes/later', { schema: note }, async (request, reply) => {
        const { id, text } = request.body;
        deps.background.run('late note', async () => {
          await new Promise((r) => setTimeout(r, 200));
          await deps.db.insertInto('notes').values({ id, text }).execute();
        });
        return reply.status(202).send({ id });
      });
      return app;
    },
  });
}

/** A logger whose lines the test reads. */
export function capturingLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}
