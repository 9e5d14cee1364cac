import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { API_KEY, freePort } from '../helpers/auth.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('npm run start:auth on a first start', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'auth-start-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('every secret set and DATA_DIR not created yet: it creates the directory, starts and answers', async () => {
    // With every secret given, no dev secret is generated, and nothing else creates DATA_DIR.
    const dataDir = join(dir, 'not', 'yet');
    const port = await freePort();
    const child = spawn(process.execPath, ['src/auth/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env['PATH'] ?? '',
        DATA_DIR: dataDir,
        AUTH_API_KEY: API_KEY,
        AUTH_ENCRYPTION_KEY: 'ab'.repeat(32),
        AUTH_HOST: '127.0.0.1',
        AUTH_PORT: String(port),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = once(child, 'exit');
    try {
      const listening = new Promise<boolean>((resolve) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          if (line.includes('account service listening')) resolve(true);
        });
        void exited.then(() => resolve(false));
      });
      assert.ok(await listening, `the service exited before listening: ${stderr}`);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(health.status, 200);
      assert.ok(existsSync(join(dataDir, 'auth.sqlite')));
      assert.ok(!existsSync(join(dataDir, 'dev-secrets.json')), 'no secret was generated');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
