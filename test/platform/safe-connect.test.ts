import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Pool } from 'undici';
import { checkUpstreamUrl, PUBLIC_ONLY, safeConnector, type UpstreamPolicy, UpstreamRefusedError } from '../../src/platform/safe-connect.ts';
import { dnsResolverLookup } from '../../src/platform/safe-fetch.ts';
import { startDnsServer } from '../helpers/dns-server.ts';

/** Every notation of a non-public address a URL can carry (WHATWG URL canonicalises the IPv4 ones). */
const LITERALS = ['127.1', '0x7f.1', '[::ffff:127.0.0.1]', '2130706433', '[::1]', '169.254.169.254', '[fd00::1]', '0.0.0.0', '10.0.0.1', '[fe80::1]'];

// The zone is read on every query, so a test can change an answer between two lookups (DNS rebinding).
const zone: Record<string, { a?: string[]; aaaa?: string[] }> = {
  'public.test': { a: ['93.184.215.14'] },
  'private.test': { a: ['10.1.2.3'] },
  'mixed.test': { a: ['93.184.215.14', '192.168.1.10'] },
  'v6private.test': { aaaa: ['fd12::1'] },
  'upstream.test': { a: ['127.0.0.1'] },
  'rebind.test': { a: ['93.184.215.14'] },
  'turning.test': { a: ['127.0.0.1'] },
};
let dns: Awaited<ReturnType<typeof startDnsServer>>;
let lookup: ReturnType<typeof dnsResolverLookup>;
let server: Server;
let port: number;
const hosts: string[] = [];
const paths: string[] = [];

before(async () => {
  dns = await startDnsServer(zone);
  lookup = dnsResolverLookup({ servers: [dns.server], timeoutMs: 500 });
  server = createServer((req, res) => {
    hosts.push(req.headers.host ?? '');
    paths.push(req.url ?? '');
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/target' });
      res.end();
      return;
    }
    // One request per connection, so that every request makes the pool connect anew.
    res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' });
    res.end('upstream');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  server.close();
  await dns.close();
});

const policy = (p: Partial<UpstreamPolicy>): UpstreamPolicy => ({ ...PUBLIC_ONLY, ...p });

describe('checkUpstreamUrl', () => {
  test('refuses every notation of a loopback, private, link-local or unspecified literal', async () => {
    for (const host of LITERALS) {
      const r = await checkUpstreamUrl(`https://${host}/v1`, PUBLIC_ONLY, lookup);
      assert.deepEqual(r.ok ? 'ok' : r.code, 'forbidden_address', host);
    }
    assert.deepEqual(dns.asked, [], 'literals are never sent to DNS');
  });

  test('accepts a public https URL, with the addresses it resolved', async () => {
    const r = await checkUpstreamUrl('https://public.test/v1', PUBLIC_ONLY, lookup);
    assert.ok(r.ok);
    assert.deepEqual(r.addresses, ['93.184.215.14']);
    assert.equal(r.url.href, 'https://public.test/v1');
    assert.ok((await checkUpstreamUrl('https://8.8.8.8/', PUBLIC_ONLY, lookup)).ok);
  });

  test('refuses a name that resolves to a private address, or to any private address among public ones', async () => {
    for (const host of ['private.test', 'mixed.test', 'v6private.test', 'upstream.test', 'localhost']) {
      const r = await checkUpstreamUrl(`https://${host}/`, PUBLIC_ONLY, lookup);
      assert.equal(r.ok ? 'ok' : r.code, 'forbidden_address', host);
    }
  });

  test('a name that does not resolve: dns_failed', async () => {
    const r = await checkUpstreamUrl('https://nowhere.test/', PUBLIC_ONLY, lookup);
    assert.equal(r.ok ? 'ok' : r.code, 'dns_failed');
  });

  test('URL rules: http(s) only, http only where the policy allows, no userinfo, no fragment', async () => {
    const cases: [string, UpstreamPolicy, string][] = [
      ['not a url', PUBLIC_ONLY, 'invalid_url'],
      ['ftp://public.test/', PUBLIC_ONLY, 'invalid_url'],
      ['file:///etc/passwd', PUBLIC_ONLY, 'invalid_url'],
      ['http://public.test/v1', PUBLIC_ONLY, 'insecure_scheme'],
      ['https://user:pw@public.test/', PUBLIC_ONLY, 'userinfo_not_allowed'],
      ['https://public.test/#x', PUBLIC_ONLY, 'fragment_not_allowed'],
      ['http://public.test/', policy({ cidrs: ['10.0.0.0/8'] }), 'insecure_scheme'],
      ['http://private.test/', policy({ cidrs: ['10.0.0.0/8'] }), 'ok'],
      ['http://10.9.9.9:11434/v1', policy({ cidrs: ['10.0.0.0/8'] }), 'ok'],
      ['http://ollama.internal:11434/v1', policy({ hosts: ['ollama.internal'] }), 'ok'],
      ['http://anything.internal/v1', policy({ allowAll: true }), 'ok'],
      ['http://127.0.0.1:8000/v1', policy({ allowAll: true }), 'ok'],
    ];
    for (const [url, p, expected] of cases) {
      const r = await checkUpstreamUrl(url, p, lookup);
      assert.equal(r.ok ? 'ok' : r.code, expected, url);
    }
  });

  test('policy lists: a host allows whatever it resolves to, a CIDR range allows only its addresses', async () => {
    const byHost = policy({ hosts: ['Private.TEST'] });
    assert.ok((await checkUpstreamUrl('https://private.test/', byHost, lookup)).ok);
    assert.equal((await checkUpstreamUrl('https://mixed.test/', byHost, lookup) as { code: string }).code, 'forbidden_address');
    const byRange = policy({ cidrs: ['192.168.0.0/16', 'fd12::/16'] });
    assert.ok((await checkUpstreamUrl('https://mixed.test/', byRange, lookup)).ok, 'public plus an allowed private address');
    assert.ok((await checkUpstreamUrl('https://v6private.test/', byRange, lookup)).ok);
    assert.equal((await checkUpstreamUrl('https://private.test/', byRange, lookup) as { code: string }).code, 'forbidden_address');
    assert.ok((await checkUpstreamUrl('https://[::ffff:192.168.4.4]/', byRange, lookup)).ok, 'an IPv4-mapped address is judged as IPv4');
    assert.equal((await checkUpstreamUrl('https://127.1/', byRange, lookup) as { code: string }).code, 'forbidden_address');
  });
});

describe('safeConnector with an undici Pool', () => {
  async function get(origin: string, p: UpstreamPolicy, path = '/'): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
    const pool = new Pool(origin, { connect: safeConnector(p, { lookup, connect: { timeout: 2000 } }) });
    try {
      const r = await pool.request({ method: 'GET', path });
      return { status: r.statusCode, body: await r.body.text(), headers: r.headers };
    } finally {
      await pool.destroy();
    }
  }

  async function refusal(origin: string, p: UpstreamPolicy): Promise<string> {
    const err = await get(origin, p).then(
      () => assert.fail(`${origin} was reached`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof UpstreamRefusedError, `${origin}: ${String(err)}`);
    return err.code;
  }

  test('reaches a loopback upstream the policy allows (by range, by host, all), with the name in the Host header', async () => {
    assert.equal((await get(`http://127.0.0.1:${port}`, policy({ cidrs: ['127.0.0.0/8'] }))).body, 'upstream');
    hosts.length = 0;
    assert.equal((await get(`http://upstream.test:${port}`, policy({ cidrs: ['127.0.0.1/32'] }))).status, 200);
    assert.equal((await get(`http://upstream.test:${port}`, policy({ hosts: ['upstream.test'] }))).status, 200);
    assert.equal((await get(`http://upstream.test:${port}`, policy({ allowAll: true }))).status, 200);
    assert.deepEqual(hosts, [`upstream.test:${port}`, `upstream.test:${port}`, `upstream.test:${port}`]);
  });

  test('refuses the same upstream without a policy: by literal in every notation and by name', async () => {
    const before = paths.length;
    for (const host of LITERALS) assert.equal(await refusal(`http://${host}:${port}`, PUBLIC_ONLY), 'forbidden_address', host);
    assert.equal(await refusal(`http://upstream.test:${port}`, PUBLIC_ONLY), 'forbidden_address');
    assert.equal(await refusal(`http://upstream.test:${port}`, policy({ cidrs: ['10.0.0.0/8'] })), 'forbidden_address');
    assert.equal(await refusal(`http://nowhere.test:${port}`, policy({ cidrs: ['127.0.0.0/8'] })), 'dns_failed');
    assert.equal(paths.length, before, 'no request reached the server');
  });

  test('DNS rebinding: a name checked public when stored and private when connected is refused', async () => {
    const stored = await checkUpstreamUrl(`https://rebind.test:${port}/v1`, PUBLIC_ONLY, lookup);
    assert.ok(stored.ok, 'public when stored');
    zone['rebind.test'] = { a: ['127.0.0.1'] };
    assert.equal(await refusal(`http://rebind.test:${port}`, PUBLIC_ONLY), 'forbidden_address');
  });

  test('every new connection is checked again: an answer that turns is refused on the next connect', async () => {
    const pool = new Pool(`http://turning.test:${port}`, { connect: safeConnector(policy({ cidrs: ['127.0.0.1/32'] }), { lookup }) });
    try {
      const first = await pool.request({ method: 'GET', path: '/' });
      assert.equal(first.statusCode, 200);
      await first.body.text();
      zone['turning.test'] = { a: ['127.0.0.2'] }; // loopback too, but outside the allowed range
      await assert.rejects(pool.request({ method: 'GET', path: '/' }), (e: unknown) => e instanceof UpstreamRefusedError && e.code === 'forbidden_address');
    } finally {
      await pool.destroy();
    }
  });

  test('a redirect from upstream is returned as is, never followed', async () => {
    paths.length = 0;
    const r = await get(`http://127.0.0.1:${port}`, policy({ cidrs: ['127.0.0.0/8'] }), '/redirect');
    assert.equal(r.status, 302);
    assert.equal(r.headers['location'], '/target');
    assert.deepEqual(paths, ['/redirect']);
  });
});
