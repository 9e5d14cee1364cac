import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { ConfigError } from '../../src/platform/config.ts';
import { fastifyTrustProxy, parseTrustProxy } from '../../src/platform/trust-proxy.ts';
import { API_KEY, type TestAuth } from '../helpers/auth.ts';
import { startOAuth } from '../helpers/oauth.ts';
import { LOOPBACK_CB } from '../helpers/oauth-raw.ts';

/**
 * Defect 4: behind a proxy, the client address is the one the trusted
 * proxies vouch for (the rightmost untrusted X-Forwarded-For hop), never the
 * leftmost value, which the client writes. The test client connects from
 * 127.0.0.1, so it plays the proxy when 127.0.0.1 is trusted.
 */
describe('AUTH_TRUST_PROXY parsing', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'trust-proxy-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const load = (value: string) => loadAuthConfig({ DATA_DIR: dir, AUTH_API_KEY: 'k'.repeat(32), AUTH_TRUST_PROXY: value });

  test('a list of addresses and CIDR ranges (IPv4, IPv6, proxy-addr names), comma-separated', () => {
    assert.deepEqual(load('10.0.0.5, 10.1.0.0/16,fd00::/8, ::1, loopback').trustProxy, [
      '10.0.0.5',
      '10.1.0.0/16',
      'fd00::/8',
      '::1',
      'loopback',
    ]);
  });

  test('a hop count; unset, false and 0 trust nobody', () => {
    assert.equal(load('1').trustProxy, 1);
    assert.equal(load('2').trustProxy, 2);
    for (const off of ['', 'false', '0']) assert.equal(load(off).trustProxy, false, off);
    assert.equal(loadAuthConfig({ DATA_DIR: dir, AUTH_API_KEY: 'k'.repeat(32) }).trustProxy, false);
  });

  test('true is refused at start with what to set instead', () => {
    for (const value of ['true', 'TRUE']) {
      assert.throws(
        () => load(value),
        (err: unknown) =>
          err instanceof ConfigError &&
          /AUTH_TRUST_PROXY=true is refused/.test(err.message) &&
          /X-Forwarded-For/.test(err.message) &&
          /addresses or CIDR ranges of your proxies/.test(err.message) &&
          /number of proxies/.test(err.message),
      );
    }
  });

  test('malformed entries are refused by name', () => {
    for (const [value, named] of [
      ['10.0.0.300', '10.0.0.300'],
      ['10.0.0.0/33', '10.0.0.0/33'],
      ['fd00::/129', 'fd00::/129'],
      ['proxy.internal', 'proxy.internal'],
      ['10.0.0.1, *', '*'],
      ['10.0.0.0/8/8', '10.0.0.0/8/8'],
      ['99', '99'],
      [',', ''],
    ]) {
      const parsed = parseTrustProxy('AUTH_TRUST_PROXY', value);
      assert.ok('problem' in parsed, `${value} should be refused`);
      assert.ok(parsed.problem.includes(named!), parsed.problem);
    }
  });
});

/**
 * Issue 31, A6: a /0 range (every address) passed the parser and crashed
 * start-up with proxy-addr's raw TypeError ("invalid range on address:
 * 0.0.0.0/0"). The docs say never to trust every address (`true` is
 * refused), so /0 is refused the same way, in one line, for both services.
 */
describe('AUTH_TRUST_PROXY and GATEWAY_TRUST_PROXY: every address (/0)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'trust-proxy-all-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const loaders = {
    AUTH_TRUST_PROXY: (value: string) => loadAuthConfig({ DATA_DIR: dir, AUTH_API_KEY: API_KEY, AUTH_TRUST_PROXY: value }).trustProxy,
    GATEWAY_TRUST_PROXY: (value: string) => loadGatewayConfig({ DATA_DIR: dir, GATEWAY_TRUST_PROXY: value }).trustProxy,
  };

  for (const [name, load] of Object.entries(loaders)) {
    test(`${name}: a /0 range is refused as true is, by name, with what to set instead`, () => {
      for (const value of ['0.0.0.0/0', '::/0', '10.0.0.0/0', '10.0.0.5, ::/00']) {
        assert.throws(
          () => load(value),
          (err: unknown) =>
            err instanceof ConfigError &&
            err.problems.length === 1 &&
            err.problems[0]!.startsWith(`${name}: "${value.split(', ').at(-1)}" trusts every address, as ${name}=true would, and is refused`) &&
            /leftmost X-Forwarded-For value/.test(err.message) &&
            /addresses or CIDR ranges of your proxies/.test(err.message),
          value,
        );
      }
    });
  }

  test('every value the parser accepts builds the HTTP layer (no TypeError at start)', () => {
    const addresses = ['0.0.0.0', '10.0.0.1', '255.255.255.255', '::', '::1', '::1.2.3.4', '::ffff:10.0.0.1', '64:ff9b::1.2.3.4', 'fe80::1', 'A::B'];
    let accepted = 0;
    for (const address of addresses) {
      for (const prefix of ['', '/0', '/00', '/1', '/8', '/32', '/33', '/64', '/128', '/129']) {
        const parsed = parseTrustProxy('AUTH_TRUST_PROXY', `${address}${prefix}`);
        if (!('value' in parsed)) continue;
        accepted++;
        assert.doesNotThrow(() => Fastify({ trustProxy: fastifyTrustProxy(parsed.value) }), `${address}${prefix}`);
      }
    }
    assert.ok(accepted > 50, `only ${accepted} accepted`);
  });

  test('npm start with /0 for both services: exit 78 and one line for each, never a TypeError', async () => {
    const child = spawn(process.execPath, ['src/main.ts'], {
      cwd: fileURLToPath(new URL('../../', import.meta.url)),
      env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dir, AUTH_TRUST_PROXY: '0.0.0.0/0', GATEWAY_TRUST_PROXY: '::/0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const [code] = await once(child, 'exit');
    assert.equal(code, 78, stderr);
    assert.ok(!/TypeError|invalid range/.test(stderr), stderr);
    assert.match(stderr, /AUTH_TRUST_PROXY: "0\.0\.0\.0\/0" trusts every address/);
    assert.match(stderr, /GATEWAY_TRUST_PROXY: "::\/0" trusts every address/);
  });
});

describe('per-IP buckets behind a proxy', () => {
  const limited = { OAUTH_LIMIT_REGISTRATION: '3/3600', OAUTH_LIMIT_AUTHORIZE: '3/300' };
  const servers: TestAuth[] = [];
  after(async () => {
    for (const s of servers) await s.close();
  });
  async function start(trustProxy: string | undefined): Promise<TestAuth> {
    const auth = await startOAuth('sqlite', { env: { ...limited, ...(trustProxy ? { AUTH_TRUST_PROXY: trustProxy } : {}) } });
    servers.push(auth);
    return auth;
  }
  const register = (auth: TestAuth, xff: string) =>
    auth.request('POST', '/oauth/register', {
      key: false,
      body: { redirect_uris: [LOOPBACK_CB] },
      headers: { 'x-forwarded-for': xff },
    });
  const authorize = (auth: TestAuth, xff: string) =>
    auth.request('GET', '/oauth/authorize?client_id=nobody', { key: false, headers: { 'x-forwarded-for': xff } });
  /** What nginx with $proxy_add_x_forwarded_for sends: the client's own header, then the address nginx saw. */
  const spoofed = (i: number, client: string) => `198.51.100.${i}, ${client}`;

  test('trusted proxy list: a new spoofed leftmost X-Forwarded-For on every request does not leave the bucket (DCR and authorize)', async () => {
    const auth = await start('127.0.0.1');
    for (let i = 1; i <= 3; i++) assert.equal((await register(auth, spoofed(i, '203.0.113.7'))).status, 201);
    const refused = await register(auth, spoofed(4, '203.0.113.7'));
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.error, 'slow_down');
    assert.equal((await register(auth, spoofed(5, '203.0.113.8'))).status, 201, 'another client behind the proxy has its own bucket');

    for (let i = 1; i <= 3; i++) assert.equal((await authorize(auth, spoofed(i, '203.0.113.9'))).status, 400);
    assert.equal((await authorize(auth, spoofed(4, '203.0.113.9'))).status, 429);
  });

  test('a hop count of 1 takes the address the one proxy appended', async () => {
    const auth = await start('1');
    for (let i = 1; i <= 3; i++) assert.equal((await register(auth, spoofed(i, '203.0.113.7'))).status, 201);
    assert.equal((await register(auth, spoofed(4, '203.0.113.7'))).status, 429);
  });

  test('a peer that is not a trusted proxy cannot choose its address with X-Forwarded-For', async () => {
    for (const setting of [undefined, '10.0.0.1']) {
      const auth = await start(setting);
      for (let i = 1; i <= 3; i++) assert.equal((await register(auth, `203.0.113.${i}`)).status, 201);
      assert.equal((await register(auth, '203.0.113.99')).status, 429, `AUTH_TRUST_PROXY=${setting}`);
    }
  });

  test('IPv6 clients count per /64: two addresses in one /64 share a bucket, another /64 has its own', async () => {
    const auth = await start('127.0.0.1');
    for (const host of ['2001:db8:1:2::a', '2001:db8:1:2:ffff:1:2:3', '2001:db8:1:2::b']) {
      assert.equal((await register(auth, spoofed(1, host))).status, 201);
    }
    assert.equal((await register(auth, spoofed(1, '2001:db8:1:2::c'))).status, 429, 'a fresh address in the same /64');
    assert.equal((await register(auth, spoofed(1, '2001:db8:1:3::a'))).status, 201, 'the next /64 is another client');
    assert.equal((await register(auth, spoofed(1, '2001:db8:1:3::b'))).status, 201);
  });
});
