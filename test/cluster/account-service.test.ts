import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { assertOAuthError } from '../helpers/oauth-raw.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { AccountsEdge, accountServiceEnv, type Who } from './accounts.ts';
import { CLUSTER_SKIP, freshIp, jobRuns, type Replica, type Replicas, startReplicas } from './replicas.ts';

/**
 * Issue 9, several replicas: two account-service processes on one
 * PostgreSQL schema and one Redis, in production mode. Whatever a user does
 * on one replica holds on the other, and every limit counts in total.
 */

const LOGIN_LIMIT = 4;
const LOCKOUT_FAILURES = 5;
const ROUNDS = 6;

describe('account service: two replicas sharing PostgreSQL and Redis', { skip: CLUSTER_SKIP }, () => {
  let db: TestDatabase;
  let smtp: TestSmtpServer;
  let cluster: Replicas;
  let a: Replica;
  let b: Replica;
  let edge: AccountsEdge;
  let user: Who;
  let clientId: string;

  before(
    async () => {
      db = await freshDatabase('postgres');
      smtp = await startSmtpServer();
      cluster = await startReplicas(
        'auth',
        2,
        accountServiceEnv(db, smtp, {
          AUTH_LIMIT_LOGIN: `${LOGIN_LIMIT}/300`,
          AUTH_LOCKOUT_FAILURES: String(LOCKOUT_FAILURES),
          AUTH_PURGE_INTERVAL_MINUTES: '1',
        }),
        // B joins A once A is up: their job timers then fire about as far apart as a start takes, within one tick.
        { oneByOne: true },
      );
      [a, b] = cluster.list as [Replica, Replica];
      edge = new AccountsEdge(smtp);
      user = await edge.verifiedAccount(a, b);
      clientId = await edge.registerClient(b);
    },
    { timeout: 30_000 },
  );
  after(async () => {
    await cluster?.stop();
    await smtp?.close();
    await db?.drop();
  });
  afterEach((t) => {
    if ('passed' in t && !t.passed) process.stderr.write(`${t.name} failed; the replicas wrote:\n${cluster?.output()}\n`);
  });

  test('a session and a personal access token made on one replica work on the other, and end on both', { timeout: 20_000 }, async () => {
    const login = await edge.login(a, user);
    assert.equal(login.status, 200, login.text);
    const session = login.body.session_token as string;
    assert.equal((await edge.request(b, 'GET', '/v1/me', { token: session })).body.user.email, user.email);

    const created = await edge.request(b, 'POST', '/v1/tokens', { token: session, json: { name: 'agent' } });
    assert.equal(created.status, 201, created.text);
    const pat = created.body.token as string;
    assert.equal(await edge.userinfo(a, pat), 200, 'the PAT made on B is accepted on A');
    assert.equal((await edge.request(a, 'POST', '/oauth/introspect', { form: { token: pat } })).body.active, true);

    assert.equal((await edge.request(a, 'DELETE', `/v1/tokens/${created.body.id}`, { token: session })).status, 204);
    assert.equal(await edge.userinfo(b, pat), 401, 'revoked on A: refused on B');
    assert.deepEqual((await edge.request(b, 'POST', '/oauth/introspect', { form: { token: pat } })).body, { active: false });

    assert.equal((await edge.request(b, 'POST', '/v1/logout', { token: session })).status, 204);
    assert.equal((await edge.request(a, 'GET', '/v1/me', { token: session })).status, 401, 'logged out on B: refused on A');
  });

  test('the OAuth browser flow works with every step on another replica than the one before', { timeout: 20_000 }, async () => {
    // A fresh user: the browser signs in (login page) and consents, authorize → login → consent alternating A, B, A, B, A.
    const walker = await edge.verifiedAccount(b, a);
    const t = await edge.tokens(walker, clientId, [a, b], b);
    assert.equal(await edge.userinfo(a, t.access_token), 200);
    const again = await edge.tokens(walker, clientId, [b], a);
    assert.equal(await edge.userinfo(b, again.access_token), 200, 'the browser session and the consent made earlier hold on B');
  });

  test('the account lockout counts failures made on both replicas, concurrent ones included', { timeout: 20_000 }, async () => {
    const victim = await edge.verifiedAccount(a, b);
    const wrong = { ...victim, password: 'not the password at all' };
    // Every guess from its own address: a lockout is per account, whoever guesses.
    const guesses = await Promise.all(Array.from({ length: LOCKOUT_FAILURES }, (_, i) => edge.login(i % 2 ? b : a, wrong)));
    assert.deepEqual(
      guesses.map((r) => r.status),
      Array(LOCKOUT_FAILURES).fill(401),
    );
    for (const replica of [a, b]) {
      const r = await edge.login(replica, victim);
      assert.equal(r.status, 429, `${replica.name}: ${r.text}`);
      assert.equal(r.body.code, 'account_locked');
      assert.ok(Number(r.headers.get('retry-after')) > 0);
    }
  });

  test('the per-IP sign-in bucket holds in total, not per replica', { timeout: 20_000 }, async () => {
    const ip = freshIp();
    const nobody = { email: 'nobody@example.com', password: 'no such account here' };
    const before = (await a.metric('auth_rate_limited_total{bucket="login"}')) + (await b.metric('auth_rate_limited_total{bucket="login"}'));
    for (let i = 0; i < LOGIN_LIMIT; i++) assert.equal((await edge.login(i % 2 ? b : a, nobody, ip)).status, 401);
    for (const replica of [a, b]) {
      const r = await edge.login(replica, user, ip);
      assert.equal(r.status, 429, `${replica.name}: ${r.text}`);
      assert.equal(r.body.code, 'rate_limited');
    }
    assert.equal((await edge.login(b, user)).status, 200, 'another address has a bucket of its own');
    const after = (await a.metric('auth_rate_limited_total{bucket="login"}')) + (await b.metric('auth_rate_limited_total{bucket="login"}'));
    assert.equal(after - before, 2);
  });

  test('a refresh token used on A and replayed on B revokes the whole family', { timeout: 20_000 }, async () => {
    const first = await edge.tokens(user, clientId, [a], a);
    const rotated = await edge.refresh(a, clientId, first.refresh_token);
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal(await edge.userinfo(b, rotated.body.access_token), 200);

    const replay = await edge.refresh(b, clientId, first.refresh_token);
    assertOAuthError(replay, 400, 'invalid_grant');
    for (const replica of [a, b]) assert.equal(await edge.userinfo(replica, rotated.body.access_token), 401, `${replica.name}: the successor's access token`);
    assertOAuthError(await edge.refresh(a, clientId, rotated.body.refresh_token), 400, 'invalid_grant');
  });

  test(`two concurrent refreshes of one token on A and B: exactly one wins, and the other, a reuse, ends the family (${ROUNDS} rounds)`, { timeout: 30_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const t = await edge.tokens(user, clientId, [round % 2 ? a : b], a);
      const replies = await Promise.all([edge.refresh(a, clientId, t.refresh_token), edge.refresh(b, clientId, t.refresh_token)]);
      assert.deepEqual(
        replies.map((r) => r.status).sort(),
        [200, 400],
        `round ${round}: ${replies.map((r) => r.text).join(' | ')}`,
      );
      assertOAuthError(replies.find((r) => r.status === 400)!, 400, 'invalid_grant');
      const won = replies.find((r) => r.status === 200)!.body;
      // OAUTH_REFRESH_REUSE_GRACE_SECONDS=0 (the default): the losing request is a reuse (docs/oauth.md).
      for (const replica of [a, b]) assert.equal(await edge.userinfo(replica, won.access_token), 401, `round ${round}, ${replica.name}`);
      assertOAuthError(await edge.refresh(b, clientId, won.refresh_token), 400, 'invalid_grant');
    }
  });

  test(`an authorization code redeemed on A and B at once: exactly one succeeds, and the other revokes what it got (${ROUNDS} rounds)`, { timeout: 30_000 }, async () => {
    const winners = { [a.name]: 0, [b.name]: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const { code, verifier } = await edge.code(user, clientId, [round % 2 ? a : b]);
      const replies = await Promise.all([edge.exchange(a, clientId, code, verifier), edge.exchange(b, clientId, code, verifier)]);
      assert.deepEqual(
        replies.map((r) => r.status).sort(),
        [200, 400],
        `round ${round}: ${replies.map((r) => r.text).join(' | ')}`,
      );
      assertOAuthError(replies.find((r) => r.status === 400)!, 400, 'invalid_grant');
      const won = replies.find((r) => r.status === 200)!.body;
      winners[replies[0]!.status === 200 ? a.name : b.name]!++;
      for (const replica of [a, b]) assert.equal(await edge.userinfo(replica, won.access_token), 401, `round ${round}, ${replica.name}`);
      assertOAuthError(await edge.refresh(a, clientId, won.refresh_token), 400, 'invalid_grant');
    }
    assert.equal(winners[a.name]! + winners[b.name]!, ROUNDS);
  });

  test("every email is sent once, though both replicas' outbox workers poll the shared outbox", { timeout: 20_000 }, async () => {
    const emails = Array.from({ length: 8 }, (_, i) => `outbox${process.pid}.${i}@example.com`);
    const registered = await Promise.all(
      emails.map((email, i) => edge.request(i % 2 ? b : a, 'POST', '/v1/register', { json: { email, password: user.password, ip: freshIp() } })),
    );
    assert.deepEqual(
      registered.map((r) => r.status),
      Array(emails.length).fill(201),
    );
    await Promise.all(emails.map((email) => smtp.waitFor((m) => m.to.includes(email))));
    // Both workers poll every 100 ms (AUTH_MAIL_POLL_MS): a row sent twice would arrive within a few polls.
    await new Promise((r) => setTimeout(r, 500));
    for (const email of emails) assert.equal(smtp.received.filter((m) => m.to.includes(email)).length, 1, email);
  });

  test('each periodic job (the purge, the purge of pending requests) runs once per tick across both replicas', { timeout: 20_000 }, async () => {
    // Each replica's timers fire 5 s after its start (src/platform/jobs.ts), then every minute; B's a start's length
    // after A's, in the same one-minute tick but for one start in 30 or so: wait until both have fired.
    const wait = Math.max(...cluster.list.map((r) => r.listeningAt)) + 6500 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    for (const replica of cluster.list) assert.equal((await fetch(`${replica.url}/healthz`)).status, 200, `${replica.name} is up: its timers fired`);
    for (const job of ['auth:purge', 'auth:purge-requests']) {
      const runs = jobRuns(cluster, job, 60_000);
      assert.ok(runs.length >= 1, `${job} ran`);
      const perTick = Map.groupBy(runs, (run) => run.tick);
      for (const [tick, inTick] of perTick) assert.equal(inTick.length, 1, `${job}, tick ${tick}: ${JSON.stringify(inTick)}`);
    }
  });
});
