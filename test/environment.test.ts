import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POSTGRES_URL, REDIS_URL } from './helpers/env.ts';

// One line per missing service on a machine without it; under CI a missing service is a failure, never a silent skip.
const ci = process.env['CI'] === 'true';

test('PostgreSQL suites', { skip: !POSTGRES_URL && !ci && 'TEST_POSTGRES_URL is not set: PostgreSQL variants skipped (.ci/run sets it)' }, () => {
  assert.ok(POSTGRES_URL, 'CI must set TEST_POSTGRES_URL');
});

test('Redis suites', { skip: !REDIS_URL && !ci && 'TEST_REDIS_URL is not set: Redis variants skipped (.ci/run sets it)' }, () => {
  assert.ok(REDIS_URL, 'CI must set TEST_REDIS_URL');
});
