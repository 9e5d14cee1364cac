import assert from 'node:assert/strict';
import dns from 'node:dns';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pbkdf2 } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { dnsResolverLookup, fetchJsonDocument, isPublicAddress, type LookupFn, SafeFetchError } from '../../src/platform/safe-fetch.ts';
import { startDnsServer } from '../helpers/dns-server.ts';

const BIG = 100 * 1024;
const json = (res: ServerResponse, body: string, headers: Record<string, string> = {}) => {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.end(body);
};

/** Every path of the one local server the suite talks to. */
const routes: Record<string, (res: ServerResponse) => void | Promise<void>> = {
  '/doc': (res) => json(res, '{"client_id":"x"}', { 'cache-control': 'public, max-age=300' }),
  '/no-store': (res) => json(res, '{"a":1}', { 'cache-control': 'no-store' }),
  '/no-cache': (res) => json(res, '[1]', { 'cache-control': 'no-cache, max-age="60"' }),
  '/plus-json': (res) => {
    res.writeHead(200, { 'content-type': 'application/example+json; charset=utf-8' });
    res.end('{"ok":true}');
  },
  '/redirect': (res) => {
    res.writeHead(302, { location: '/target' });
    res.end();
  },
  '/target': (res) => json(res, '{}'),
  '/missing': (res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{}');
  },
  '/big-length': (res) => json(res, 'x'.repeat(BIG)),
  '/big-chunked': async (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    for (let i = 0; i < BIG / 1024; i++) {
      if (!res.write(' '.repeat(1024))) await once(res, 'drain');
      if (res.destroyed) return;
    }
    res.end('{}');
  },
  '/html': (res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<p>hi</p>');
  },
  '/broken': (res) => json(res, '{"client_id": '),
  '/hang': () => {},
};

let server: Server;
let base: string;
let port: number;
let connections = 0;
const hits: string[] = [];
const seen: IncomingHttpHeaders[] = [];

before(async () => {
  server = createServer((req, res) => {
    hits.push(req.url!);
    seen.push(req.headers);
    res.on('error', () => {});
    void routes[req.url!]?.(res);
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

after(async () => {
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
});

const local = { allowInsecure: true };

/** Runs `fn`, asserting it throws a SafeFetchError with `code`. */
async function refused(code: string, fn: () => Promise<unknown>): Promise<void> {
  await assert.rejects(fn, (err: unknown) => {
    assert.ok(err instanceof SafeFetchError, `expected SafeFetchError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

/** A lookup that fails the test if it is asked (IP literals must not reach DNS). */
const noDns: LookupFn = () => assert.fail('DNS must not be consulted');

describe('fetchJsonDocument: successful fetches (insecure mode, local server)', () => {
  test('returns the JSON and max-age, sends Accept and User-Agent', async () => {
    const result = await fetchJsonDocument(`${base}/doc`, local);
    assert.deepEqual(result, { json: { client_id: 'x' }, maxAgeSeconds: 300, noStore: false });
    assert.equal(seen.at(-1)!.accept, 'application/json');
    assert.equal(seen.at(-1)!['user-agent'], 'accounts-oauth-metadata-fetcher');
  });

  test('no-store and no-cache both mean noStore', async () => {
    assert.deepEqual(await fetchJsonDocument(`${base}/no-store`, local), { json: { a: 1 }, maxAgeSeconds: undefined, noStore: true });
    assert.deepEqual(await fetchJsonDocument(`${base}/no-cache`, local), { json: [1], maxAgeSeconds: 60, noStore: true });
  });

  test('accepts application/<x>+json with parameters', async () => {
    assert.deepEqual((await fetchJsonDocument(`${base}/plus-json`, local)).json, { ok: true });
  });
});

describe('fetchJsonDocument: URL rules', () => {
  test('http is refused unless allowInsecure', async () => {
    await refused('insecure_scheme', () => fetchJsonDocument(`${base}/doc`, { allowInsecure: false }));
  });

  test('non-URLs and other schemes are refused', async () => {
    await refused('invalid_url', () => fetchJsonDocument('not a url', local));
    await refused('invalid_url', () => fetchJsonDocument('ftp://example.com/doc', local));
  });

  test('userinfo is refused, and the message does not echo it', async () => {
    await refused('userinfo_not_allowed', () => fetchJsonDocument('https://user:s3cret@example.com/doc', { allowInsecure: false }));
    await assert.rejects(fetchJsonDocument(`http://u:s3cret@127.0.0.1:${port}/doc`, local), (err: Error) => !err.message.includes('s3cret'));
  });

  test('fragments are refused, even an empty one', async () => {
    await refused('fragment_not_allowed', () => fetchJsonDocument('https://example.com/doc#x', { allowInsecure: false }));
    await refused('fragment_not_allowed', () => fetchJsonDocument('https://example.com/doc#', { allowInsecure: false }));
  });
});

describe('fetchJsonDocument: non-public addresses are refused before connecting', () => {
  const literals = [
    '127.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '10.0.0.1', '169.254.169.254', '192.168.1.1',
    '172.16.0.1', '[fd00::1]', '[fe80::1]', '0.0.0.0', '224.0.0.1', '2130706433', '[64:ff9b::a9fe:a9fe]',
  ];
  for (const host of literals) {
    test(`https://${host}`, async () => {
      const before = connections;
      await refused('forbidden_address', () => fetchJsonDocument(`https://${host}:${port}/doc`, { allowInsecure: false, lookup: noDns }));
      assert.equal(connections, before, 'no connection was made');
    });
  }

  test('localhost (resolving to loopback)', async () => {
    const lookup: LookupFn = async () => ['127.0.0.1', '::1'];
    await refused('forbidden_address', () => fetchJsonDocument(`https://localhost:${port}/doc`, { allowInsecure: false, lookup }));
  });

  test('a host with one private address among public ones', async () => {
    const lookup: LookupFn = async () => ['93.184.216.34', '10.0.0.1'];
    await refused('forbidden_address', () => fetchJsonDocument('https://mixed.example/doc', { allowInsecure: false, lookup }));
  });

  test('DNS failures and empty answers are dns_failed', async () => {
    const failing: LookupFn = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    await refused('dns_failed', () => fetchJsonDocument('https://nowhere.example/doc', { allowInsecure: false, lookup: failing }));
    await refused('dns_failed', () => fetchJsonDocument('https://nowhere.example/doc', { allowInsecure: false, lookup: async () => [] }));
  });
});

describe('fetchJsonDocument: answers that are refused', () => {
  test('a redirect is refused and its Location is never fetched', async () => {
    await refused('redirect_not_allowed', () => fetchJsonDocument(`${base}/redirect`, local));
    assert.ok(hits.includes('/redirect'));
    assert.ok(!hits.includes('/target'), 'the redirect target was fetched');
  });

  test('a non-2xx status is http_status', async () => {
    await refused('http_status', () => fetchJsonDocument(`${base}/missing`, local));
  });

  test('a body over maxBytes is too_large, with and without Content-Length', async () => {
    await refused('too_large', () => fetchJsonDocument(`${base}/big-length`, { ...local, maxBytes: 64 * 1024 }));
    await refused('too_large', () => fetchJsonDocument(`${base}/big-chunked`, { ...local, maxBytes: 64 * 1024 }));
  });

  test('text/html is not_json, broken JSON is invalid_json', async () => {
    await refused('not_json', () => fetchJsonDocument(`${base}/html`, local));
    await refused('invalid_json', () => fetchJsonDocument(`${base}/broken`, local));
  });

  test('a server that never answers is a timeout after about timeoutMs', async () => {
    const start = performance.now();
    await refused('timeout', () => fetchJsonDocument(`${base}/hang`, { ...local, timeoutMs: 300 }));
    const elapsed = performance.now() - start;
    assert.ok(elapsed >= 250 && elapsed < 1500, `took ${elapsed} ms`);
  });

  test('a resolver that never answers is a timeout too', async () => {
    const lookup: LookupFn = () => new Promise(() => {});
    await refused('timeout', () => fetchJsonDocument('https://slow.example/doc', { allowInsecure: false, lookup, timeoutMs: 300 }));
  });
});

describe('fetchJsonDocument: no DNS rebinding', () => {
  test('the connection goes to the checked address; DNS is asked once', async (t) => {
    // 192.0.2.1 (TEST-NET-1) would hang if it were ever connected to; it must never be. Node's own
    // resolver (what net.connect uses without the pinned lookup) is stubbed so a regression sends no query.
    const system = t.mock.method(dns, 'lookup', (_host: string, _options: unknown, callback: (err: Error) => void) => {
      process.nextTick(callback, Object.assign(new Error('system resolver used'), { code: 'ENOTFOUND' }));
    });
    let calls = 0;
    const lookup: LookupFn = async () => (++calls === 1 ? ['127.0.0.1'] : ['192.0.2.1']);
    const start = performance.now();
    const result = await fetchJsonDocument(`http://rebind.example:${port}/doc`, { ...local, lookup, timeoutMs: 2000 });
    assert.deepEqual(result.json, { client_id: 'x' });
    assert.equal(calls, 1);
    assert.equal(system.mock.callCount(), 0, 'the system resolver was not asked');
    assert.ok(performance.now() - start < 1000);
    assert.equal(seen.at(-1)!.host, `rebind.example:${port}`, 'the URL keeps its host name');
  });
});

describe('isPublicAddress', () => {
  const table: [string, boolean][] = [
    ['8.8.8.8', true], ['1.1.1.1', true], ['93.184.216.34', true], ['100.128.0.1', true], ['172.32.0.1', true],
    ['2606:4700:4700::1111', true], ['2a00:1450:4001::200e', true], ['::ffff:8.8.8.8', true], ['64:ff9b::808:808', true],
    ['0.0.0.0', false], ['10.1.2.3', false], ['100.64.0.1', false], ['127.0.0.1', false], ['169.254.169.254', false],
    ['172.16.0.1', false], ['172.31.255.255', false], ['192.0.0.8', false], ['192.0.2.1', false], ['192.88.99.1', false],
    ['192.168.1.1', false], ['198.18.0.1', false], ['198.51.100.7', false], ['203.0.113.9', false], ['224.0.0.1', false],
    ['240.0.0.1', false], ['255.255.255.255', false],
    ['::', false], ['::1', false], ['::ffff:127.0.0.1', false], ['::ffff:7f00:1', false], ['::ffff:10.0.0.1', false],
    ['64:ff9b::a9fe:a9fe', false], ['64:ff9b::', false], ['100::1', false], ['2001::1', false], ['2001:db8::1', false],
    ['2002:c000:0204::1', false], ['fc00::1', false], ['fd00::1', false], ['fe80::1', false], ['fe80::1%eth0', false],
    ['ff02::1', false], ['::7f00:1', false], ['not-an-ip', false], ['', false],
  ];
  for (const [ip, expected] of table) {
    test(`${ip || '(empty)'} is ${expected ? 'public' : 'not public'}`, () => assert.equal(isPublicAddress(ip), expected));
  }
});

describe('dnsResolverLookup: DNS through c-ares, off the thread pool', () => {
  let dnsServer: Awaited<ReturnType<typeof startDnsServer>>;
  let lookup: LookupFn;
  before(async () => {
    dnsServer = await startDnsServer({
      'doc.test': { a: ['127.0.0.1'] },
      'dual.test': { a: ['192.0.2.10'], aaaa: ['2001:db8::10'] },
      'v6only.test': { aaaa: ['2001:db8::20'] },
    });
    lookup = dnsResolverLookup({ servers: [dnsServer.server] });
  });
  after(() => dnsServer.close());

  test('A and AAAA answers; a fetch through it connects to the resolved address', async () => {
    assert.deepEqual(await lookup('dual.test'), ['192.0.2.10', '2001:db8::10']);
    assert.deepEqual(await lookup('v6only.test'), ['2001:db8::20']);
    const result = await fetchJsonDocument(`http://doc.test:${port}/doc`, { ...local, lookup });
    assert.deepEqual(result.json, { client_id: 'x' });
    assert.equal(seen.at(-1)!.host, `doc.test:${port}`);
    assert.ok(dnsServer.asked.includes('doc.test A'), dnsServer.asked.join(', '));
  });

  test('an unknown name is dns_failed; a private answer is still forbidden_address', async () => {
    await refused('dns_failed', () => fetchJsonDocument('https://unknown.test/doc', { allowInsecure: false, lookup }));
    await refused('forbidden_address', () => fetchJsonDocument(`https://doc.test:${port}/doc`, { allowInsecure: false, lookup }));
  });

  test('RFC 6761: localhost is loopback and .invalid fails, neither asking the name server', async () => {
    const before = dnsServer.asked.length;
    assert.deepEqual(await lookup('localhost'), ['127.0.0.1', '::1']);
    assert.deepEqual(await lookup('app.localhost.'), ['127.0.0.1', '::1']);
    await assert.rejects(lookup('nowhere.invalid'));
    assert.deepEqual(dnsServer.asked.slice(before), []);
  });

  test("names resolve while every thread of libuv's pool is busy (bcrypt's pool), unlike dns.lookup", async () => {
    const poolSize = Number(process.env['UV_THREADPOOL_SIZE'] ?? 4);
    const order: string[] = [];
    const busy = Array.from(
      { length: poolSize },
      () => new Promise<void>((resolve) => pbkdf2('secret', 'salt', 400_000, 64, 'sha512', () => resolve(void order.push('pool job')))),
    );
    // getaddrinfo queues behind the pool's jobs: the proof that the pool was full.
    const systemLookup = dns.promises.lookup('localhost').then(() => order.push('dns.lookup'));
    const resolved = lookup('doc.test').then(() => order.push('c-ares'));
    await Promise.all([...busy, systemLookup, resolved]);
    assert.equal(order[0], 'c-ares', order.join(', '));
    assert.ok(order.indexOf('dns.lookup') > order.indexOf('pool job'), order.join(', '));
  });
});
