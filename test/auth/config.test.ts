import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { ConfigError } from '../../src/platform/config.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GOOD_KEY = 'k'.repeat(32);
const ENCRYPTION_KEY_HEX = '0123456789abcdef'.repeat(4);

/** A complete production environment; tests remove or spoil one setting at a time. */
const PRODUCTION = {
  NODE_ENV: 'production',
  AUTH_API_KEY: GOOD_KEY,
  AUTH_ENCRYPTION_KEY: ENCRYPTION_KEY_HEX,
  SMTP_HOST: 'smtp.example.com',
  AUTH_BASE_URL: 'https://accounts.example.com',
};

function configError(env: Record<string, string>): ConfigError {
  try {
    loadAuthConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err;
  }
  assert.fail('expected loadAuthConfig to throw');
}

describe('loadAuthConfig in production', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'auth-config-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('with nothing set it names every missing setting at once', () => {
    const err = configError({ NODE_ENV: 'production', DATA_DIR: dir });
    for (const name of ['AUTH_API_KEY', 'AUTH_ENCRYPTION_KEY', 'SMTP_HOST', 'AUTH_BASE_URL']) assert.match(err.message, new RegExp(name));
    assert.equal(err.problems.length, 4, err.message);
    assert.ok(!existsSync(join(dir, 'dev-secrets.json')), 'production never generates a key');
  });

  test('a complete environment loads, with the secure defaults', () => {
    const config = loadAuthConfig({ ...PRODUCTION, DATA_DIR: dir });
    assert.equal(config.production, true);
    assert.equal(config.apiKey, GOOD_KEY);
    assert.equal(config.apiKeyGenerated, false);
    assert.equal(config.baseUrl, 'https://accounts.example.com');
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.port, 8080);
    assert.equal(config.smtp?.port, 587);
    assert.equal(config.bcryptCost, 12);
  });

  test('an AUTH_API_KEY shorter than 32 characters is refused', () => {
    const err = configError({ ...PRODUCTION, AUTH_API_KEY: 'k'.repeat(31) });
    assert.deepEqual(err.problems, ['AUTH_API_KEY must be at least 32 characters']);
  });

  test('AUTH_ENCRYPTION_KEY is required, and must be 32 bytes in hex or base64url', () => {
    const { AUTH_ENCRYPTION_KEY: _, ...withoutKey } = PRODUCTION;
    assert.deepEqual(configError(withoutKey).problems, [
      'AUTH_ENCRYPTION_KEY is required when NODE_ENV=production (it seals email bodies in the outbox, which hold live verification links)',
    ]);
    for (const bad of ['0123456789abcdef'.repeat(3), 'not a key', 'A'.repeat(44)]) {
      assert.match(configError({ ...PRODUCTION, AUTH_ENCRYPTION_KEY: bad }).message, /AUTH_ENCRYPTION_KEY must be 32 bytes written as 64 hex digits or 43 base64url/);
    }
    assert.deepEqual(loadAuthConfig(PRODUCTION).encryptionKey, Buffer.from(ENCRYPTION_KEY_HEX, 'hex'));
    const b64 = Buffer.alloc(32, 7).toString('base64url');
    assert.deepEqual(loadAuthConfig({ ...PRODUCTION, AUTH_ENCRYPTION_KEY: b64 }).encryptionKey, Buffer.alloc(32, 7));
  });

  test('a bcrypt cost below 12 is refused', () => {
    assert.match(configError({ ...PRODUCTION, AUTH_BCRYPT_COST: '10' }).message, /AUTH_BCRYPT_COST must be at least 12/);
  });
});

describe('loadAuthConfig: malformed values are reported, all of them', () => {
  test('a rate that is not "points/seconds"', () => {
    for (const bad of ['abc', '10', '0/60', '10/0', '-1/60', '1.5/60']) {
      const err = configError({ ...PRODUCTION, AUTH_LIMIT_LOGIN: bad });
      assert.equal(err.problems.length, 1, err.message);
      assert.match(err.problems[0]!, /^AUTH_LIMIT_LOGIN must be "points\/seconds"/);
      assert.ok(err.problems[0]!.includes(`"${bad}"`), 'the bad value is quoted back');
    }
    assert.deepEqual(loadAuthConfig({ ...PRODUCTION, AUTH_LIMIT_LOGIN: '5/60' }).limits.login, { points: 5, durationSeconds: 60 });
  });

  test('a port that is not an integer from 0 to 65535', () => {
    for (const bad of ['http', '65536', '-1', '80.5']) {
      const err = configError({ ...PRODUCTION, AUTH_PORT: bad });
      assert.deepEqual(err.problems, [`AUTH_PORT must be an integer from 0 to 65535 (got "${bad}")`]);
    }
    assert.equal(loadAuthConfig({ ...PRODUCTION, AUTH_PORT: ' 9000 ' }).port, 9000);
  });

  test('several problems come in one error, one per line', () => {
    const err = configError({ ...PRODUCTION, AUTH_PORT: 'x', AUTH_LIMIT_LOGIN: 'abc', AUTH_BASE_URL: 'not a url' });
    assert.equal(err.problems.length, 3, err.message);
    assert.equal(err.message.split('\n').length, 4);
    assert.match(err.message, /AUTH_BASE_URL must be an absolute URL/);
  });

  test('AUTH_VERIFY_URL without {token} is refused', () => {
    assert.match(configError({ ...PRODUCTION, AUTH_VERIFY_URL: 'https://app.example/verify' }).message, /AUTH_VERIFY_URL must contain \{token\}/);
  });
});

describe('loadAuthConfig in development', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'auth-config-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('generates the API key once into DATA_DIR/dev-secrets.json (0600) and keeps it across loads', () => {
    const dataDir = join(dir, 'nested', 'data'); // created on demand
    const first = loadAuthConfig({ DATA_DIR: dataDir });
    assert.equal(first.production, false);
    assert.equal(first.apiKeyGenerated, true);
    assert.match(first.apiKey, /^[A-Za-z0-9_-]{43}$/);
    const file = join(dataDir, 'dev-secrets.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(file, 'utf8'))['AUTH_API_KEY'], first.apiKey);

    const second = loadAuthConfig({ DATA_DIR: dataDir });
    assert.equal(second.apiKey, first.apiKey, 'a restart keeps the key');
    const other = loadAuthConfig({ DATA_DIR: join(dir, 'elsewhere') });
    assert.notEqual(other.apiKey, first.apiKey, 'each data directory has its own key');
  });

  test('an AUTH_API_KEY that is set is used and nothing is written', () => {
    const dataDir = join(dir, 'explicit');
    const config = loadAuthConfig({ DATA_DIR: dataDir, AUTH_API_KEY: 'short-is-fine-in-development', AUTH_ENCRYPTION_KEY: ENCRYPTION_KEY_HEX });
    assert.equal(config.apiKey, 'short-is-fine-in-development');
    assert.equal(config.apiKeyGenerated, false);
    assert.ok(!existsSync(join(dataDir, 'dev-secrets.json')));
  });

  test('generates the email encryption key once into DATA_DIR/dev-secrets.json and keeps it across loads', () => {
    const dataDir = join(dir, 'encryption');
    const first = loadAuthConfig({ DATA_DIR: dataDir, AUTH_API_KEY: 'short-is-fine-in-development' });
    assert.equal(first.encryptionKey.length, 32);
    const saved = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8'))['AUTH_ENCRYPTION_KEY'];
    assert.deepEqual(Buffer.from(saved, 'base64url'), first.encryptionKey);
    assert.deepEqual(loadAuthConfig({ DATA_DIR: dataDir }).encryptionKey, first.encryptionKey, 'a restart keeps the key');
  });

  test('defaults suit a laptop: loopback, SQLite under DATA_DIR, the base URL on the port', () => {
    const config = loadAuthConfig({ DATA_DIR: join(dir, 'defaults'), AUTH_PORT: '9123' });
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.baseUrl, 'http://localhost:9123');
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.sqlitePath, join(dir, 'defaults', 'auth.sqlite'));
    assert.equal(config.smtp, undefined);
  });
});

describe('the entry points refuse a bad configuration', () => {
  for (const entry of ['src/auth/main.ts', 'src/main.ts', 'src/migrate.ts']) {
    test(`${entry} exits non-zero with the problems on stderr and no stack trace`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'auth-main-'));
      try {
        const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
          const child = execFile(
            process.execPath, // the Node 24 running this test (node_modules/.bin/node)
            [entry],
            { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', NODE_ENV: 'production', DATA_DIR: dir }, timeout: 20_000 },
            (_err, out, err) => resolve({ code: child.exitCode, stdout: out, stderr: err }),
          );
        });
        assert.equal(code, 78, `exit code; stderr: ${stderr}`);
        assert.match(stderr, /^invalid configuration:\n/);
        for (const name of ['AUTH_API_KEY', 'AUTH_ENCRYPTION_KEY', 'SMTP_HOST', 'AUTH_BASE_URL']) assert.match(stderr, new RegExp(name));
        assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
        assert.doesNotMatch(stderr, /ConfigError|node:internal/);
        assert.equal(stdout, '');
        assert.ok(!existsSync(join(dir, 'auth.sqlite')), 'nothing was opened');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
