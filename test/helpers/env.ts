/**
 * Which real backing services this run has. PostgreSQL and Redis suites run
 * when TEST_POSTGRES_URL / TEST_REDIS_URL are set (.ci/run sets both);
 * test/environment.test.ts reports a skip in one line, and fails under CI.
 */
export const POSTGRES_URL = process.env['TEST_POSTGRES_URL'] || undefined;
export const REDIS_URL = process.env['TEST_REDIS_URL'] || undefined;

export type DbKind = 'sqlite' | 'postgres';

/** The databases every storage-touching suite runs against. */
export const DB_KINDS: DbKind[] = POSTGRES_URL ? ['sqlite', 'postgres'] : ['sqlite'];
