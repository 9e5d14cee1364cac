import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { assertOAuthError } from '../helpers/oauth-raw.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { AccountsEdge, accountServiceEnv, type Who } from './accounts.ts';
import { CLUSTER_SKIP, type Replica, type Replicas, startReplicas } from './replicas.ts';

/**
 * Issue 9, several replicas, with OAUTH_REFRESH_REUSE_GRACE_SECONDS=30: a
 * client that refreshes twice at once (two agents' threads), its requests
 * landing on different replicas, gets one successor, not a revoked family.
 */

const ROUNDS = 6;

describe('OAuth refresh grace window across two account-service replicas', { skip: CLUSTER_SKIP }, () => {
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
      cluster = await startReplicas('auth', 2, accountServiceEnv(db, smtp, { OAUTH_REFRESH_REUSE_GRACE_SECONDS: '30' }));
      [a, b] = cluster.list as [Replica, Replica];
      edge = new AccountsEdge(smtp);
      user = await edge.verifiedAccount(b, a);
      clientId = await edge.registerClient(a);
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

  test(`two concurrent refreshes of one token on A and B both get the same successor, which lives on (${ROUNDS} rounds)`, { timeout: 30_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const t = await edge.tokens(user, clientId, [round % 2 ? a : b], b);
      const [viaA, viaB] = await Promise.all([edge.refresh(a, clientId, t.refresh_token), edge.refresh(b, clientId, t.refresh_token)]);
      assert.equal(viaA!.status, 200, `round ${round}, A: ${viaA!.text}`);
      assert.equal(viaB!.status, 200, `round ${round}, B: ${viaB!.text}`);
      assert.equal(viaA!.body.refresh_token, viaB!.body.refresh_token, `round ${round}: one successor`);
      assert.equal(viaA!.body.access_token, viaB!.body.access_token);
      for (const replica of [a, b]) assert.equal(await edge.userinfo(replica, viaA!.body.access_token), 200, `round ${round}, ${replica.name}`);
      const next = await edge.refresh(round % 2 ? a : b, clientId, viaB!.body.refresh_token);
      assert.equal(next.status, 200, `round ${round}: the successor rotates in turn: ${next.text}`);
    }
  });

  test('a refresh retried on B after its answer from A was lost gets the same successor; once that was used, the retry ends the family', { timeout: 20_000 }, async () => {
    const t = await edge.tokens(user, clientId, [a, b], a);
    const first = await edge.refresh(a, clientId, t.refresh_token);
    assert.equal(first.status, 200, first.text);
    const retried = await edge.refresh(b, clientId, t.refresh_token);
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.body.refresh_token, first.body.refresh_token);

    const second = await edge.refresh(b, clientId, first.body.refresh_token);
    assert.equal(second.status, 200, second.text);
    // The old token again, its successor used: a reuse.
    assertOAuthError(await edge.refresh(a, clientId, t.refresh_token), 400, 'invalid_grant');
    for (const replica of [a, b]) assert.equal(await edge.userinfo(replica, second.body.access_token), 401, replica.name);
  });
});
