import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { GatewayTables } from '../src/gateway/schema.ts';
import { closeDatabase, openDatabase } from '../src/platform/db.ts';
import { freePort } from './helpers/auth.ts';
import { usageRow } from './helpers/gateway.ts';

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

  test('npm run rebuild-usage-rollups refills the rollups from the records (a record written without them, by an older release, is counted)', async () => {
    const env = { PATH: process.env['PATH'] ?? '', DATA_DIR: join(dir, 'rollups') };
    const run = (script: string) =>
      new Promise<string>((resolve, reject) => {
        execFile(process.execPath, [script], { cwd: ROOT, env }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
      });
    await run('src/migrate.ts');
    const { db } = await openDatabase<GatewayTables>({ url: undefined, sqlitePath: join(dir, 'rollups', 'gateway.sqlite') });
    const totals = () => db.selectFrom('usage_rollup_tenant').select((eb) => eb.fn.sum<number>('requests').as('n')).executeTakeFirstOrThrow();
    try {
      // As a release before the rollups wrote it: the record alone.
      await db.insertInto('usage_records').values(usageRow({ request_id: 'old-release', tenant_id: 't1', created_at: Date.UTC(2026, 10, 1), cost_usd: 0.5 })).execute();
      assert.equal((await totals()).n, null, 'not in the rollups yet');
      assert.match(await run('src/rebuild-usage-rollups.ts'), /^gateway \(sqlite\): usage rollups rebuilt from 1 usage records$/m);
      assert.equal(Number((await totals()).n), 1);
    } finally {
      await closeDatabase(db);
    }
  });

  test('starts every service on embedded defaults, prints its URL and development key, wires the console\'s account sign-in, answers, and exits 0 on SIGTERM', async () => {
    const dataDir = join(dir, 'start');
    const port = await freePort();
    const gatewayPort = await freePort();
    const child = spawn(process.execPath, ['src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, AUTH_PORT: String(port), GATEWAY_PORT: String(gatewayPort), LOG_LEVEL: 'info' },
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
        // The gateway starts last; the wiring is printed right after its listening line.
        if (line.includes('AI gateway listening')) setTimeout(() => resolve(true), 500);
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

      // The wiring: one client, its secret generated into the development secrets, known to both services.
      const gatewayUrl = `http://localhost:${gatewayPort}`;
      const redirectUri = `${gatewayUrl}/sign-in/account/callback`;
      assert.ok(logged.some((l) => l.name === 'gateway' && l.msg.includes(`public URL ${gatewayUrl}`)), 'the gateway\'s URL is printed');
      assert.ok(
        logged.some((l) => l.msg.includes(`"Sign in with your account" is wired to the account service at http://localhost:${port} (client gateway-console`)),
        'the wiring is printed',
      );
      assert.ok(secrets['GATEWAY_ACCOUNTS_CLIENT_SECRET'], 'the client secret is a development secret');
      assert.ok(!lines.join('\n').includes(secrets['GATEWAY_ACCOUNTS_CLIENT_SECRET']!), 'and is never printed');
      const metadata = (await (await fetch(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server`)).json()) as { issuer: string };
      assert.equal(metadata.issuer, `http://localhost:${port}`, 'OAuth is on and public');
      const authorize = new URL(`http://127.0.0.1:${port}/oauth/authorize`);
      authorize.search = new URLSearchParams({ response_type: 'code', client_id: 'gateway-console', redirect_uri: redirectUri, scope: 'identity', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' }).toString();
      const toLogin = await fetch(authorize, { redirect: 'manual' });
      assert.equal(toLogin.status, 302, 'the account service knows the console as a client with its redirect URI');
      assert.match(toLogin.headers.get('location') ?? '', /\/oauth\/login\?/);
      const signIn = await (await fetch(`http://127.0.0.1:${gatewayPort}/sign-in`)).text();
      assert.match(signIn, /<form method="post" action="\/sign-in\/account">/, 'the console shows the button');
    } finally {
      child.kill('SIGTERM');
      const [code] = await exited;
      assert.equal(code, 0, `exit code; stderr: ${stderr}`);
    }
  });
});
