import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { POSTGRES_URL, REDIS_URL } from '../helpers/env.ts';

const SCRIPT = fileURLToPath(new URL('../fixtures/loaded-packages.ts', import.meta.url));

/** The optional packages a service started with `env` imported (see the script). */
function loadedPackages(env: Record<string, string>): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [SCRIPT], { env: { PATH: process.env['PATH'] ?? '', LOG_LEVEL: 'silent', ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as string[]);
    });
  });
}

/**
 * Memory is one of the gateway's benchmark figures: a package only some
 * deployments use is imported only when its setting is there (pg with a
 * database URL, nodemailer with SMTP_HOST, ioredis with REDIS_URL,
 * pino-pretty on a development terminal).
 */
describe('packages only some deployments need are loaded only when configured', () => {
  let database: TestDatabase;
  before(async () => {
    database = await freshDatabase('sqlite');
  });
  after(() => database.drop());

  test('SQLite, no SMTP, no Redis, stdout not a terminal: none of them', async () => {
    assert.deepEqual(await loadedPackages({ DATA_DIR: database.dataDir }), []);
  });

  test('SMTP_HOST: nodemailer only', async () => {
    assert.deepEqual(await loadedPackages({ DATA_DIR: database.dataDir, SMTP_HOST: 'localhost', SMTP_PORT: '2525' }), ['nodemailer']);
  });

  test('REDIS_URL: ioredis only', { skip: !REDIS_URL && 'TEST_REDIS_URL is not set' }, async () => {
    assert.deepEqual(await loadedPackages({ DATA_DIR: database.dataDir, REDIS_URL: REDIS_URL! }), ['ioredis']);
  });

  test('a database URL: pg only', { skip: !POSTGRES_URL && 'TEST_POSTGRES_URL is not set' }, async () => {
    const pg = await freshDatabase('postgres');
    try {
      assert.deepEqual(await loadedPackages({ DATA_DIR: pg.dataDir, AUTH_DATABASE_URL: pg.url! }), ['pg']);
    } finally {
      await pg.drop();
    }
  });
});
