import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from './helpers/auth.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

describe('npm start (src/main.ts) and npm run migrate (src/migrate.ts)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'main-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('npm run migrate migrates every listed service, then finds them up to date', async () => {
    const run = () =>
      new Promise<string>((resolve, reject) => {
        execFile(process.execPath, ['src/migrate.ts'], { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', DATA_DIR: join(dir, 'migrate') } }, (err, stdout) =>
          err ? reject(err) : resolve(stdout),
        );
      });
    assert.match(await run(), /^auth \(sqlite\): applied 0001_/m);
    assert.match(await run(), /^auth \(sqlite\): up to date$/m);
  });

  test('starts every service on embedded defaults, prints its URL and development key, answers, and exits 0 on SIGTERM', async () => {
    const dataDir = join(dir, 'start');
    const port = await freePort();
    const child = spawn(process.execPath, ['src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, AUTH_PORT: String(port), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = once(child, 'exit');
    const lines: string[] = [];
    const listening = new Promise<boolean>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        lines.push(line);
        if (line.includes('development API key')) resolve(true);
      });
      void exited.then(() => resolve(false));
    });
    try {
      assert.ok(await listening, `exited before it was ready: ${stderr}`);
      const logged = lines.map((l) => JSON.parse(l) as { msg: string; name: string });
      assert.ok(logged.some((l) => l.name === 'auth' && l.msg.includes(`public URL http://localhost:${port}`)), 'the URL is printed');
      const secrets = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as Record<string, string>;
      assert.ok(logged.some((l) => l.msg.includes(`X-Api-Key: ${secrets['AUTH_API_KEY']}`)), 'the development key is kept under DATA_DIR and printed');
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
      assert.ok(existsSync(join(dataDir, 'auth.sqlite')));
    } finally {
      child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0, `exit code; stderr: ${stderr}`);
    }
  });
});
