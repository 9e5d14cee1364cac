import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { CERT_FILE, startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { CLUSTER_SKIP, clusterRedisUrl, freshIp, jobRuns, type Replica, type Replicas, startReplicas } from './replicas.ts';

/**
 * Issue 9, several replicas: two gateway processes on one PostgreSQL schema
 * and one Redis, in production mode, in front of the fake provider. The
 * response cache, in-flight dedup, budgets, per-IP limits and revocations
 * are shared: a client sees one gateway, whichever replica answers.
 */

const MODEL = 'openai/gpt-4o-mini';
const SIGNUP_LIMIT = 3;
const RPM = 6;

interface Tenant {
  session: string;
  apiKey: string;
  apiKeyId: string;
}

describe('AI gateway: two replicas sharing PostgreSQL and Redis', { skip: CLUSTER_SKIP }, () => {
  let db: TestDatabase;
  let smtp: TestSmtpServer;
  let fake: FakeProvider;
  let cluster: Replicas;
  let a: Replica;
  let b: Replica;

  /** A control-plane call as a browser behind the edge makes it (its own address in X-Forwarded-For). */
  // biome-ignore lint/suspicious/noExplicitAny: replies are inspected field by field
  async function api(replica: Replica, path: string, init: { method?: string; token?: string; body?: unknown; ip?: string } = {}): Promise<{ status: number; body: any }> {
    const res = await fetch(`${replica.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        'x-forwarded-for': init.ip ?? freshIp(),
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  let signups = 0;
  /** Signs a workspace up on `signupOn` and stores its OpenAI key (pointing at the fake) on `keyOn`. */
  async function tenant(signupOn: Replica, keyOn: Replica): Promise<Tenant> {
    const signup = await api(signupOn, '/api/v1/signup', { body: { name: 'Cluster', email: `gw${process.pid}.${++signups}@example.com` } });
    assert.equal(signup.status, 201, JSON.stringify(signup.body));
    const stored = await api(keyOn, '/api/v1/tenant/provider-keys', {
      token: signup.body.session_token,
      body: { provider: 'openai', key: 'sk-fake-provider-key', base_url: `${fake.url}/v1` },
    });
    assert.equal(stored.status, 201, JSON.stringify(stored.body));
    return { session: signup.body.session_token, apiKey: signup.body.api_key, apiKeyId: signup.body.api_key_id };
  }

  const openai = (replica: Replica, apiKey: string) => new OpenAI({ baseURL: `${replica.url}/v1`, apiKey, maxRetries: 0 });
  const ask = (content: string) => ({ model: MODEL, messages: [{ role: 'user' as const, content }] });
  /** The HTTP status of one call (200, or the error's), and the gateway's error code. */
  async function call(replica: Replica, apiKey: string, content: string, maxTokens?: number): Promise<{ status: number; code?: string | null }> {
    try {
      await openai(replica, apiKey).chat.completions.create({ ...ask(content), ...(maxTokens ? { max_tokens: maxTokens } : {}) });
      return { status: 200 };
    } catch (err) {
      if (err instanceof OpenAI.APIError) return { status: err.status ?? 0, code: err.code };
      throw err;
    }
  }

  before(
    async () => {
      db = await freshDatabase('postgres');
      smtp = await startSmtpServer();
      fake = await createFakeProvider();
      cluster = await startReplicas('gateway', 2, {
        NODE_ENV: 'production',
        LOG_LEVEL: 'debug',
            GATEWAY_DATABASE_URL: db.url!,
        REDIS_URL: clusterRedisUrl(),
        GATEWAY_BASE_URL: 'https://gateway.example',
        GATEWAY_ENCRYPTION_KEY: 'd'.repeat(64),
        GATEWAY_TRUST_PROXY: '127.0.0.1',
        GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
        GATEWAY_LIMIT_SIGNUP: `${SIGNUP_LIMIT}/3600`,
        GATEWAY_PURGE_INTERVAL_MINUTES: '1',
        GATEWAY_MAIL_POLL_MS: '100',
        SMTP_HOST: 'localhost',
        SMTP_PORT: String(smtp.port),
        SMTP_TLS_CA: CERT_FILE,
      }, { oneByOne: true });
      [a, b] = cluster.list as [Replica, Replica];
    },
    { timeout: 30_000 },
  );
  after(async () => {
    await cluster?.stop();
    await fake?.close();
    await smtp?.close();
    await db?.drop();
  });
  afterEach((t) => {
    if ('passed' in t && !t.passed) process.stderr.write(`${t.name} failed; the replicas wrote:\n${cluster?.output()}\n`);
    fake?.reset();
  });

  test('a console session, a magic-link sign-in and an API key made on one replica work on the other', { timeout: 20_000 }, async () => {
    const email = `signin${process.pid}@example.com`;
    const signup = await api(a, '/api/v1/signup', { body: { name: 'Across', email } });
    assert.equal(signup.status, 201);
    const session = signup.body.session_token as string;
    assert.equal((await api(b, '/api/v1/tenant', { token: session })).body.email, email);
    const stored = await api(b, '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'openai', key: 'sk-fake-provider-key', base_url: `${fake.url}/v1` } });
    assert.equal(stored.status, 201);

    const created = await api(a, '/api/v1/tenant/api-keys', { token: session, body: { name: 'made on A' } });
    assert.equal(created.status, 201);
    const answer = await openai(b, created.body.key).chat.completions.create(ask('a key made a moment ago'));
    assert.equal(answer.choices[0]?.message.content, 'echo: a key made a moment ago', 'the key made on A is accepted on B at once');

    // The sign-up's address confirmed (the link A mailed, followed on B), so that sign-ins of it reach this workspace.
    const confirmation = await smtp.waitFor((m) => m.to.includes(email) && /Confirm/.test(m.subject));
    const confirmed = await api(b, '/api/v1/auth/confirm-email', { body: { token: /token=([\w-]+)/.exec(confirmation.text)?.[1] } });
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    assert.equal((await api(b, '/api/v1/auth/magic-link/request', { body: { email } })).status, 202);
    const mail = await smtp.waitFor((m) => m.to.includes(email) && /sign-in link/.test(m.subject));
    const token = /token=([\w-]+)/.exec(mail.text)?.[1];
    assert.ok(token, mail.text);
    const signedIn = await api(a, '/api/v1/auth/magic-link/verify', { body: { token } });
    assert.equal(signedIn.status, 200, 'a link mailed by B signs in on A');
    assert.equal((await api(b, '/api/v1/tenant', { token: signedIn.body.session_token })).body.id, signup.body.tenant_id);
    assert.equal((await api(a, '/api/v1/auth/magic-link/verify', { body: { token } })).status, 409, 'and only once');

    assert.equal((await api(b, '/api/v1/auth/logout', { method: 'POST', token: session })).status, 204);
    assert.equal((await api(a, '/api/v1/tenant', { token: session })).status, 401, 'logged out on B: refused on A');
  });

  test('the per-IP sign-up bucket holds in total, not per replica', { timeout: 20_000 }, async () => {
    const ip = freshIp();
    const signUp = (replica: Replica) => api(replica, '/api/v1/signup', { ip, body: { name: 'Bucket', email: `bucket${process.pid}.${++signups}@example.com` } });
    for (let i = 0; i < SIGNUP_LIMIT; i++) assert.equal((await signUp(i % 2 ? b : a)).status, 201);
    for (const replica of [b, a]) {
      const r = await signUp(replica);
      assert.equal(r.status, 429, replica.name);
      assert.equal(r.body.code, 'rate_limited');
    }
  });

  test('100 identical concurrent calls spread over both replicas make one upstream call, streamed or not; then a hit on either', { timeout: 30_000 }, async () => {
    const t = await tenant(a, b);
    const clients = [openai(a, t.apiKey), openai(b, t.apiKey)];
    // The provider takes long enough for all 100 to arrive while the first is upstream (later ones would be hits).
    fake.setBehaviour({ latencyMs: 800 });
    const plain = await Promise.all(Array.from({ length: 100 }, (_, i) => clients[i % 2]!.chat.completions.create(ask('one for all')).withResponse()));
    assert.equal(fake.calls.count, 1, 'one upstream call for the 100');
    assert.ok(plain.every((r) => r.data.choices[0]?.message.content === 'echo: one for all'));
    const statuses = plain.map((r) => r.response.headers.get('x-gateway-cache'));
    assert.equal(statuses.filter((s) => s === 'miss').length, 1, statuses.join());
    assert.ok(statuses.every((s) => s === 'miss' || s === 'dedup' || s === 'hit'), statuses.join());

    fake.setBehaviour({ latencyMs: 600, chunkDelayMs: 30, chunks: 5 });
    const streams = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        let text = '';
        for await (const chunk of await clients[i % 2]!.chat.completions.create({ ...ask('one stream for all'), stream: true })) {
          text += chunk.choices[0]?.delta.content ?? '';
        }
        return text;
      }),
    );
    assert.equal(fake.calls.count, 2, 'one upstream call for the 100 streams');
    assert.ok(streams.every((s) => s === 'echo: one stream for all'));

    for (const client of clients) {
      const { response } = await client.chat.completions.create(ask('one for all')).withResponse();
      assert.equal(response.headers.get('x-gateway-cache'), 'hit');
    }
    assert.equal(fake.calls.count, 2);
  });

  test('a revoked sk-gw- key stops working on both replicas at once', { timeout: 20_000 }, async () => {
    const t = await tenant(b, a);
    for (let round = 0; round < 5; round++) {
      const created = await api(round % 2 ? a : b, '/api/v1/tenant/api-keys', { token: t.session, body: { name: `doomed ${round}` } });
      assert.equal(created.status, 201);
      const key = created.body.key as string;
      // Each replica has the key in its in-process cache (60 s) before the revocation.
      for (const replica of [a, b]) assert.equal((await call(replica, key, `before ${round}`)).status, 200);
      assert.equal((await api(round % 2 ? b : a, `/api/v1/tenant/api-keys/${created.body.id}`, { method: 'DELETE', token: t.session })).status, 204);
      const [viaA, viaB] = await Promise.all([call(a, key, `after ${round}`), call(b, key, `after ${round}`)]);
      assert.deepEqual(viaA, { status: 401, code: 'invalid_api_key' }, `round ${round}, A`);
      assert.deepEqual(viaB, { status: 401, code: 'invalid_api_key' }, `round ${round}, B`);
    }
    assert.equal((await call(a, t.apiKey, 'the other key')).status, 200, "the tenant's other key still works");
  });

  test("a tenant's requests-per-minute budget holds in total, set on one replica and enforced on both at once", { timeout: 20_000 }, async () => {
    const t = await tenant(a, b);
    // Both replicas load the tenant (no limit yet) into their in-process caches.
    for (const replica of [a, b]) assert.equal((await call(replica, t.apiKey, `warm ${replica.name}`)).status, 200);
    // The window is the UTC minute: keep the burst inside one.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 5000) await new Promise((r) => setTimeout(r, left + 50));
    const patched = await api(a, '/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { limits: { requests_per_minute: RPM } } } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));

    const results = await Promise.all(Array.from({ length: 2 * RPM }, (_, i) => call(i % 2 ? b : a, t.apiKey, `budget ${i}`)));
    assert.equal(results.filter((r) => r.status === 200).length, RPM, JSON.stringify(results));
    assert.ok(
      results.filter((r) => r.status !== 200).every((r) => r.status === 429 && r.code === 'rate_limit_exceeded'),
      JSON.stringify(results),
    );
    for (const replica of [a, b]) {
      assert.deepEqual(await call(replica, t.apiKey, `over ${replica.name}`), { status: 429, code: 'rate_limit_exceeded' });
      const limits = await api(replica, '/api/v1/tenant/limits', { token: t.session });
      assert.equal(limits.body.tenant.usage.requests_per_minute.used, RPM, `${replica.name}: ${JSON.stringify(limits.body)}`);
    }
  });

  test("a key's tokens-per-day budget counts what calls really spent on either replica", { timeout: 20_000 }, async () => {
    const t = await tenant(b, a);
    const limited = await api(a, `/api/v1/tenant/api-keys/${t.apiKeyId}`, { method: 'PATCH', token: t.session, body: { limits: { tokens_per_day: 450 } } });
    assert.equal(limited.status, 200, JSON.stringify(limited.body));
    // Each call reserves about 30 tokens (a short prompt, max_tokens 20) and is settled at what the provider reports: 150.
    fake.setBehaviour({ promptTokens: 100, completionTokens: 50 });
    for (const [i, replica] of [a, b, a].entries()) assert.equal((await call(replica, t.apiKey, `spend ${i} on ${replica.name}`, 20)).status, 200);
    const used = async (replica: Replica) => (await api(replica, '/api/v1/tenant/limits', { token: t.session })).body.api_keys[0].usage.tokens_per_day.used;
    for (let i = 0; (await used(b)) < 450; i++) {
      assert.ok(i < 100, `the three calls never settled: ${await used(b)} used`);
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const replica of [b, a]) {
      assert.deepEqual(await call(replica, t.apiKey, `one more on ${replica.name}`, 20), { status: 429, code: 'token_limit_exceeded' }, replica.name);
      assert.equal(await used(replica), 450);
    }
  });

  test('the purge job runs once per tick across both replicas', { timeout: 20_000 }, async () => {
    // As in the account service's suite: B's timer fires a start's length after A's, in the same one-minute tick.
    const wait = Math.max(...cluster.list.map((r) => r.listeningAt)) + 6500 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    for (const replica of cluster.list) assert.equal((await fetch(`${replica.url}/healthz`)).status, 200, `${replica.name} is up: its timer fired`);
    const runs = jobRuns(cluster, 'gateway:purge', 60_000);
    assert.ok(runs.length >= 1, 'gateway:purge ran');
    for (const [tick, inTick] of Map.groupBy(runs, (run) => run.tick)) assert.equal(inTick.length, 1, `tick ${tick}: ${JSON.stringify(inTick)}`);
  });
});
