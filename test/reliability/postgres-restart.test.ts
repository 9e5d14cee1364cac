import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort, PASSWORD, startTestAuth, uniqueEmail } from '../helpers/auth.ts';

/** The machine's PostgreSQL binaries, run as its `postgres` user (initdb refuses root): the newest version installed. */
function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root) || process.getuid?.() !== 0) return undefined;
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  return version ? join(root, version, 'bin') : undefined;
}

/** A PostgreSQL server of this test's own (a fresh cluster on a free port), so that it can be stopped and started. */
async function privatePostgres(bin: string) {
  const dir = mkdtempSync(join(tmpdir(), 'pg-restart-'));
  chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), 0);
  const port = await freePort();
  const asPostgres = (cmd: string, args: string[]) => execFileSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { stdio: 'ignore' });
  asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres']);
  const start = () => asPostgres('pg_ctl', ['-D', join(dir, 'data'), '-w', '-l', join(dir, 'log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    /** As a crash would: no checkpoint, every connection cut. */
    kill: () => asPostgres('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', 'stop']),
    destroy() {
      try {
        this.kill();
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const bin = postgresBin();

/**
 * Issue 9, faults: PostgreSQL goes away (killed, as a crash would) under the
 * account service, then comes back. While it is away every request that
 * needs it is a clear 503 in the API's problem+json (never a 500 or a hang)
 * and /readyz says 503; once it is back the service answers again by itself,
 * with no restart, and the session made before the outage still works.
 */
test('PostgreSQL killed and started again: 503s while it is down, /readyz says so, service resumes without a restart', { skip: bin ? false : 'needs root and the machine\'s PostgreSQL binaries (/usr/lib/postgresql) to run a server of its own', timeout: 60_000 }, async (t) => {
  const pg = await privatePostgres(bin!);
  t.after(() => pg.destroy());
  const dataDir = mkdtempSync(join(tmpdir(), 'pg-restart-data-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const auth = await startTestAuth({ kind: 'postgres', url: pg.url, dataDir, drop: async () => {} });
  t.after(() => auth.close());
  const { email } = await auth.verifiedAccount(uniqueEmail());
  const session = await auth.login(email);
  assert.equal((await auth.request('GET', '/v1/me', { token: session })).status, 200);

  pg.kill();
  for (const [method, path, options] of [
    ['GET', '/v1/me', { token: session }],
    ['POST', '/v1/login', { body: { email, password: PASSWORD, ip: '198.51.100.7' } }],
    ['POST', '/v1/register', { body: { email: uniqueEmail(), password: PASSWORD, ip: '198.51.100.7' } }],
  ] as const) {
    const started = performance.now();
    const r = await auth.request(method, path, options);
    assert.equal(r.status, 503, `${method} ${path} while the database is down: ${r.status} ${r.text}`);
    assert.equal(r.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    assert.equal(r.body.code, 'database_unavailable');
    assert.ok(r.headers.get('retry-after'));
    assert.ok(performance.now() - started < 10_000, 'answered, not held');
  }
  const ready = await auth.request('GET', '/readyz', { key: false });
  assert.equal(ready.status, 503);

  pg.start();
  let back = false;
  for (let i = 0; i < 50 && !back; i++) {
    back = (await auth.request('GET', '/readyz', { key: false })).status === 200;
    if (!back) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(back, '/readyz is 200 again once the database is back');
  assert.equal((await auth.request('GET', '/v1/me', { token: session })).status, 200, 'the session made before the outage works, with no restart');
});
