import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import fc from 'fast-check';
import { createFakeProvider } from '../../tools/fake-provider/server.ts';
import { API_KEY, freePort, PASSWORD, tokenFromMail } from '../helpers/auth.ts';
import { type ServiceProcess, startServiceProcess } from '../helpers/service-process.ts';
import { CERT_FILE, startSmtpServer } from '../helpers/smtp.ts';
import { INSPECTOR_ENV, memoryAfterGc, type ProcessMemory } from './process-memory.ts';

/**
 * Issue 9, bad input at scale: requests generated for every endpoint of
 * both services (from their OpenAPI documents, the OAuth endpoints listed by
 * hand: they are left out of it), and beyond their schemas: hostile strings
 * (NUL, invalid UTF-8, RTL, combining marks, a megabyte), numbers at 2^53
 * and 1e309, __proto__ and constructor keys, duplicate keys and parameters,
 * deep nesting, wrong content types, truncated bodies, bad percent-encoding,
 * oversized headers and bodies, wrong methods. Whatever comes, no 5xx, no
 * hang, each error in its surface's documented shape (problem+json, RFC 6749,
 * OpenAI's), and the service, a process of its own, is still running and
 * answering afterwards, its live memory flat, and exits 0 on SIGTERM.
 * Seeded and bounded.
 */

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}
interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** Anthropic's `request-id` header, when sent. */
  requestId?: string | undefined;
}

/** Raw HTTP, so that bytes no client library would send (invalid UTF-8, duplicate keys) go out as they are. A hang fails the test. */
function send(base: string, r: Sent): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: r.method, path: r.path, headers: { ...r.headers, ...(r.body ? { 'content-length': String(r.body.length) } : {}) }, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
            requestId: typeof res.headers['request-id'] === 'string' ? res.headers['request-id'] : undefined,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in 10 s to ${r.method} ${r.path}`)));
    req.on('error', (err: Error & { code?: string }) => {
      // A server refusing a request (its headers, say) before a long body is sent whole may close the connection
      // under the upload, as HTTP allows: the client sees a reset instead of the answer. Never a hang. A body past
      // what the sockets buffer (64 KiB here; a 512 KiB one was seen cut on a busy machine) may meet it.
      if ((err.code === 'ECONNRESET' || err.code === 'EPIPE') && (r.body?.length ?? 0) > 64 * 1024) resolve({ status: 0, contentType: '', text: '' });
      else reject(err);
    });
    req.end(r.body);
  });
}

const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('\u0000', 'a\u0000b', '\u202eevil\u202c', 'e\u0301\u0301\u0301', '🙂'.repeat(50), '%', '%zz', '%00', '../../etc/passwd', "' OR 1=1 --", '<script>', '\uFEFF', '\uD800'),
  fc.constant('x'.repeat(1024 * 1024)),
);
const hostileNumber = fc.constantFrom(2 ** 53, 2 ** 53 + 1, -(2 ** 53), 1e308, -0, 0.1, Number.MAX_VALUE, 4096, -1);
const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, hostileString, hostileNumber, fc.boolean(), fc.constant(null), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'prototype')), tie('value'), { maxKeys: 3 })),
})).value;

/** A JSON body text, mostly near the schema (its property names), often broken in a way JSON.stringify never is. */
function bodyText(fields: readonly string[]): fc.Arbitrary<Buffer> {
  const near = fc.dictionary(fc.oneof(fc.constantFrom(...(fields.length ? fields : ['x'])), fc.constantFrom('__proto__', 'constructor')), hostileValue, { maxKeys: 6 }).map((o) => JSON.stringify(o));
  return fc.oneof(
    near.map((t) => Buffer.from(t)),
    near.map((t) => Buffer.from(t.slice(0, Math.max(1, Math.floor(t.length / 2))))), // truncated
    fc.constantFrom(...fields, 'x').map((f) => Buffer.from(`{"${f}":1,"${f}":"twice","__proto__":{"admin":true}}`)), // duplicate keys
    fc.integer({ min: 1, max: 5000 }).map((n) => Buffer.from(`${'['.repeat(n)}${']'.repeat(n)}`)), // deep nesting
    fc.constantFrom('1e309', '-1e309', '9007199254740993', 'null', '[]', '""', '{', ''),
    fc.constant(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d])), // {"a":"<invalid UTF-8>"}
    fc.constant(Buffer.alloc(3 * 1024 * 1024, 0x61)), // over every body limit
  ).map((b) => (Buffer.isBuffer(b) ? b : Buffer.from(b)));
}

interface Operation {
  method: string;
  path: string;
  fields: string[];
  form?: boolean;
}

function operationsOf(openapi: { paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> } }>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const props = op.requestBody?.content?.['application/json']?.schema?.properties;
      ops.push({ method: method.toUpperCase(), path, fields: props ? Object.keys(props) : [] });
    }
  }
  return ops;
}

const segment = fc.oneof(fc.constantFrom('%', '%zz', '%C0%AF', '%00', '..', '%2e%2e%2f', 'x'.repeat(3000), '%F0%9F%99%82', '%ED%A0%80'), fc.string({ maxLength: 12 }).map(encodeURIComponent));
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom('?limit=1&limit=2', '?limit=-1', '?limit=1e309', '?from=%zz', '?a[b]=1&a=2', '?__proto__[x]=1', `?q=${'y'.repeat(10_000)}`, '?limit=9007199254740993'),
);

function requests(ops: readonly Operation[], auth: fc.Arbitrary<Record<string, string>>): fc.Arbitrary<Sent> {
  return fc
    .record({
      op: fc.constantFrom(...ops),
      method: fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'POST', 'OPTIONS') }),
      param: segment,
      query,
      auth,
      contentType: fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined),
      extraHeader: fc.oneof(fc.constant({}), fc.constant({ 'x-big': 'h'.repeat(20_000) }), fc.constant({ 'x-gateway-session-id': 'a'.repeat(5000) })),
      body: fc.boolean(),
    })
    .chain((r) =>
      bodyText(r.op.fields).map((body) => {
        const method = r.method ?? r.op.method;
        const path = r.op.path.replace(/\{[^}]+\}/g, r.param) + r.query;
        const headers: Record<string, string> = { ...r.auth, ...r.extraHeader };
        if (r.contentType) headers['content-type'] = r.op.form && r.contentType === 'application/json' ? 'application/x-www-form-urlencoded' : r.contentType;
        const withBody = method !== 'GET' && r.body;
        return { method, path, headers, body: withBody ? body : undefined };
      }),
    );
}

/** The documented error shapes: our APIs' problem+json, OAuth's RFC 6749 JSON, the gateway's OpenAI and Anthropic errors; Node's own refusal of a malformed request has no body. */
function assertShape(r: Sent, a: Answer, surface: 'problem' | 'oauth' | 'openai' | 'anthropic') {
  const what = `${r.method} ${r.path.slice(0, 120)} -> ${a.status} ${a.text.slice(0, 300)}`;
  if (a.status === 0) return; // closed under a large upload after a refusal (see send)
  assert.ok(a.status < 500, `no 5xx: ${what}`);
  assert.doesNotMatch(a.text, /at .*\.(ts|js):\d+|node_modules/, `no stack trace: ${what}`);
  if (a.status < 400) return;
  if (a.contentType.startsWith('text/html')) return; // a page (OAuth's authorize): its errors are pages
  const body = JSON.parse(a.text) as Record<string, unknown>;
  if (surface === 'openai') {
    const e = body['error'] as Record<string, unknown>;
    assert.equal(typeof e?.['message'], 'string', what);
    assert.equal(typeof e?.['code'], 'string', what);
    return;
  }
  // A refusal before routing (headers too large, a malformed URL) cannot know its surface: problem+json that is also an OpenAI error.
  if (surface === 'anthropic' && body['type'] === 'about:blank') return assertShape(r, a, 'openai');
  if (surface === 'anthropic') {
    const e = body['error'] as Record<string, unknown>;
    assert.equal(body['type'], 'error', what);
    assert.equal(typeof e?.['type'], 'string', what);
    assert.equal(typeof e?.['message'], 'string', what);
    assert.equal(typeof a.requestId, 'string', `request-id header: ${what}`);
    return;
  }
  if (surface === 'oauth' && typeof body['error'] === 'string') return;
  assert.match(a.contentType, /^application\/problem\+json/, what);
  assert.equal(body['status'], a.status, what);
  assert.equal(typeof body['code'], 'string', what);
  assert.equal(typeof body['detail'], 'string', what);
}

// Seeded, so a failure is reproduced by the same run; HOSTILE_SEED and HOSTILE_RUNS explore further.
const RUNS = Number(process.env['HOSTILE_RUNS'] ?? 1000);
const SEED = Number(process.env['HOSTILE_SEED'] ?? 20261125);

/** A failure told in a few lines (the default report prints every generated megabyte). */
function compact(out: fc.RunDetails<[Sent]>): void {
  if (!out.failed) return;
  const r = out.counterexample?.[0];
  const request = r ? `${r.method} ${r.path.slice(0, 200)} (headers ${Object.keys(r.headers).join(', ')}; body ${r.body?.length ?? 0} bytes: ${r.body?.subarray(0, 120).toString('utf8') ?? ''})` : 'no counterexample';
  throw new Error(`failed after ${out.numRuns} runs (seed ${out.seed}, path ${out.counterexamplePath}): ${request}: ${String(out.errorInstance).slice(0, 800)}`);
}

/**
 * The process stays up and its memory flat. Each service runs in its own
 * process, as `npm run start:auth` / `start:gateway` runs it, on SQLite in a
 * fresh DATA_DIR, with the inspector on (process-memory.ts). After a warm-up
 * (the first fifth of the runs: code compiled, pools, buckets and caches
 * made) and again after the rest, a full GC is forced through the inspector
 * and the live memory (heap data and external memory, compiled code left
 * out) read from the service's own /metrics. What is still reachable after a
 * GC and grows with the requests is a leak.
 */
const WARMUP = Math.round(RUNS / 5);
/**
 * The growth allowed from the warm-up to the end: 640 bytes a request, and
 * never less than 500 KiB (512,000 bytes, the same at the default 800
 * requests). With no leak, the default seed and seeds 1 to 11 measured from
 * -540 to +200 KiB on either service (the JIT's feedback filling, startup
 * code's bytecode flushed): the bound is 2.5 times the largest. A Map in the
 * HTTP layer that keeps each request's method, URL and headers, never
 * cleared, grew it by 1.6 to 2.0 MiB over the same 800 requests and fails
 * it; one keeping the method and URL alone (0.5 to 0.7 KB a request)
 * failed it on the gateway (+537 KiB) and passed on the account service
 * (+181 KiB): a leak of under about 640 bytes a request is lost in the
 * noise of 800 requests (HOSTILE_RUNS=5000 looks closer).
 */
const LEAK_BYTES_PER_REQUEST = 640;
const LEAK_FLOOR_BYTES = 512_000;
/** A coarse guard on what V8 does not account for (SQLite, sockets, TLS, malloc arenas): resident memory moved by at most 5 MiB over 800 requests in these runs, 12 MiB over 4,000. */
const RSS_GROWTH_BYTES = 32 * 2 ** 20;

/** A service under attack: its process, where it answers, its metrics prefix. */
interface Target {
  service: ServiceProcess;
  url: string;
  prefix: string;
}

/** Starts `script` as its own process on a free port (`portVariable`) and a fresh DATA_DIR, with the inspector on. */
async function startTarget(t: TestContext, script: string, prefix: string, portVariable: string, env: (url: string) => Record<string, string>): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hostile-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = await startServiceProcess(t, script, { ...INSPECTOR_ENV, DATA_DIR: dataDir, [portVariable]: String(port), ...env(url) });
  return { service, url, prefix };
}

interface Attack {
  warm: ProcessMemory;
  end: ProcessMemory;
}

/** Sends RUNS generated requests to `target`, each answer checked by `check`; the memory is read after the warm-up and at the end. */
async function attack(target: Target, sent: fc.Arbitrary<Sent>, check: (r: Sent, a: Answer) => void): Promise<Attack> {
  const memory = () => memoryAfterGc(target.service, target.url, target.prefix);
  let runs = 0;
  let warm: ProcessMemory | undefined;
  await fc.assert(
    fc.asyncProperty(sent, async (r) => {
      if (++runs === WARMUP + 1 && !warm) warm = await memory();
      check(r, await send(target.url, r));
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true, reporter: compact },
  );
  const end = await memory();
  return { warm: warm ?? end, end };
}

const kib = (bytes: number) => `${bytes >= 0 ? '+' : ''}${Math.round(bytes / 1024)} KiB`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** Still running and answering, its memory flat, and it still shuts down cleanly. */
async function assertStillSound(t: TestContext, target: Target, { warm, end }: Attack): Promise<void> {
  const { child } = target.service;
  assert.ok(child.exitCode === null && child.signalCode === null, `the process is still running:\n${target.service.output().slice(-4000)}`);
  assert.equal((await fetch(`${target.url}/healthz`)).status, 200, 'still up');
  const requests = RUNS - WARMUP;
  const growth = end.live - warm.live;
  const bound = Math.max(LEAK_FLOOR_BYTES, LEAK_BYTES_PER_REQUEST * requests);
  t.diagnostic(
    `live memory after GC: ${mib(warm.live)} after ${WARMUP} requests, ${kib(growth)} after ${requests} more (bound ${kib(bound)}); ` +
      `whole heap ${kib(end.heapUsed - warm.heapUsed)}, RSS ${mib(warm.rss)} ${kib(end.rss - warm.rss)}`,
  );
  assert.ok(growth <= bound, `live memory grew ${kib(growth)} over ${requests} requests, more than ${kib(bound)}: a leak`);
  assert.ok(end.rss - warm.rss <= RSS_GROWTH_BYTES, `resident memory grew ${kib(end.rss - warm.rss)} over ${requests} requests`);
  assert.equal(await target.service.stop(), 0, `exits 0 on SIGTERM:\n${target.service.output().slice(-4000)}`);
}

describe('hostile input to every endpoint: no 5xx, each error in its surface\'s shape, the service still up, its memory flat (property)', () => {
  test('the account service: its API and its OAuth endpoints', { timeout: 240_000 }, async (t) => {
    const smtp = await startSmtpServer();
    t.after(() => smtp.close());
    const auth = await startTarget(t, 'src/auth/main.ts', 'auth', 'AUTH_PORT', (url) => ({
      AUTH_BASE_URL: url,
      AUTH_API_KEY: API_KEY,
      AUTH_BCRYPT_COST: '4',
      SMTP_HOST: 'localhost',
      SMTP_PORT: String(smtp.port),
      SMTP_TLS_CA: CERT_FILE,
      AUTH_MAIL_POLL_MS: '50',
      AUTH_LIMIT_REGISTER: '100000/60',
      AUTH_LIMIT_LOGIN: '100000/60',
      OAUTH_CLIENT_ID: 'hostile-client',
      OAUTH_CLIENT_SECRET: 's'.repeat(40),
      OAUTH_CLIENT_REDIRECT_URIS: 'https://app.example.com/cb',
    }));
    const call = async (path: string, body: unknown) => {
      const res = await fetch(`${auth.url}${path}`, { method: 'POST', headers: { 'x-api-key': API_KEY, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const answer = (await res.json()) as Record<string, unknown>;
      assert.ok(res.ok, `${path}: ${res.status} ${JSON.stringify(answer)}`);
      return answer;
    };
    const email = 'hostile@example.com';
    await call('/v1/register', { email, password: PASSWORD, ip: '198.51.100.1' });
    await call('/v1/verify', { token: tokenFromMail(await smtp.waitFor((m) => m.to.includes(email))) });
    const session = (await call('/v1/login', { email, password: PASSWORD, ip: '198.51.100.2' }))['session_token'] as string;

    const spec = (await (await fetch(`${auth.url}/openapi.json`, { headers: { 'x-api-key': API_KEY } })).json()) as Parameters<typeof operationsOf>[0];
    const ops = [
      ...operationsOf(spec),
      { method: 'POST', path: '/oauth/token', fields: ['grant_type', 'code', 'refresh_token', 'client_id', 'code_verifier', 'redirect_uri', 'scope'], form: true },
      { method: 'POST', path: '/oauth/revoke', fields: ['token', 'client_id'], form: true },
      { method: 'POST', path: '/oauth/introspect', fields: ['token'], form: true },
      { method: 'POST', path: '/oauth/register', fields: ['redirect_uris', 'client_name', 'token_endpoint_auth_method', 'grant_types', 'scope'] },
      { method: 'GET', path: '/oauth/authorize', fields: [] },
      { method: 'GET', path: '/oauth/userinfo', fields: [] },
      { method: 'GET', path: '/.well-known/oauth-authorization-server', fields: [] },
    ];
    const keys = fc.constantFrom<Record<string, string>>(
      { 'x-api-key': API_KEY, authorization: `Bearer ${session}` },
      { 'x-api-key': API_KEY },
      { 'x-api-key': API_KEY, authorization: 'Bearer %00x' },
      {},
      { 'x-api-key': 'wrong' },
    );
    const result = await attack(auth, requests(ops, keys), (r, a) =>
      assertShape(r, a, r.path.startsWith('/oauth') || r.path.startsWith('/.well-known') ? 'oauth' : 'problem'),
    );
    await assertStillSound(t, auth, result);
  });

  test('the gateway: its control plane and its OpenAI and Anthropic data planes', { timeout: 240_000 }, async (t) => {
    const fake = await createFakeProvider();
    t.after(() => fake.close());
    const gw = await startTarget(t, 'src/gateway/main.ts', 'gateway', 'GATEWAY_PORT', () => ({
      GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
      GATEWAY_LIMIT_SIGNUP: '100000/60',
    }));
    const post = async (path: string, body: unknown, session?: string) => {
      const res = await fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(session ? { authorization: `Bearer ${session}` } : {}) },
        body: JSON.stringify(body),
      });
      const answer = (await res.json()) as Record<string, unknown>;
      assert.equal(res.status, 201, `${path}: ${JSON.stringify(answer)}`);
      return answer;
    };
    const signup = await post('/api/v1/signup', { name: 'Hostile', email: 'hostile@example.com' });
    const gwSession = signup['session_token'] as string;
    await post('/api/v1/tenant/provider-keys', { provider: 'openai', key: 'openai-secret-key-XYZW', base_url: `${fake.url}/v1` }, gwSession);

    const spec = (await (await fetch(`${gw.url}/openapi.json`)).json()) as Parameters<typeof operationsOf>[0];
    const keys = fc.constantFrom<Record<string, string>>(
      { authorization: `Bearer ${gwSession}` },
      { authorization: `Bearer ${signup['api_key'] as string}` },
      { authorization: 'Bearer sk-gw-%00' },
      { 'x-api-key': signup['api_key'] as string },
      {},
    );
    const surfaceOf = (path: string) => (path.startsWith('/v1/messages') ? 'anthropic' : path.startsWith('/v1/') ? 'openai' : 'problem');
    const result = await attack(gw, requests(operationsOf(spec), keys), (r, a) => assertShape(r, a, surfaceOf(r.path)));
    await assertStillSound(t, gw, result);
  });
});
