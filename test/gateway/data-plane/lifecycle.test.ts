import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import { decodeUsageRow } from '../../../src/gateway/usage/usage-row-json.ts';
import { gatewayMigrations } from '../../../src/gateway/migrations.ts';
import type { GatewayTables } from '../../../src/gateway/schema.ts';
import { closeDatabase, openDatabase } from '../../../src/platform/db.ts';
import { migrateToLatest } from '../../../src/platform/db.ts';
import { DB_KINDS, POSTGRES_URL, REDIS_URL } from '../../helpers/env.ts';
import { startLiveGateway, startReplica } from '../../helpers/gateway-service.ts';

const until = async (check: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
};

for (const kind of DB_KINDS) {
  describe(`data plane lifecycle (${kind})`, () => {
    test('a client that disconnects mid-stream aborts the upstream request; the call is recorded as 499', async (t) => {
      const gw = await startLiveGateway(kind);
      t.after(() => gw.close());
      const tenant = await gw.tenant();
      gw.fake.setBehaviour({ chunkDelayMs: 200, chunks: 20 }, { requests: 1 });
      const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'long answer' }], stream: true });
      const requestId = await new Promise<string>((resolve, reject) => {
        const req = request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
        });
        req.on('response', (res) => {
          res.once('data', () => {
            req.destroy();
            resolve(String(res.headers['x-gateway-request-id']));
          });
        });
        req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
        req.end(body);
      });
      await until(() => gw.fake.calls.aborted === 1, 'the upstream request to be aborted');
      await until(async () => {
        await gw.service.dataPlane.usage.flush();
        const row = await gw.service.deps.db.selectFrom('usage_records').select(['status', 'error_code']).where('request_id', '=', requestId).executeTakeFirst();
        return row?.status === 499 && row.error_code === 'client_closed_request';
      }, 'the usage record of the aborted call');
    });

    test('a client that disconnects while waiting for a whole (non-streamed) answer aborts the upstream request; recorded as 499', async (t) => {
      const gw = await startLiveGateway(kind);
      t.after(() => gw.close());
      const tenant = await gw.tenant();
      gw.fake.setBehaviour({ latencyMs: 5_000 }, { requests: 1 });
      const leaving = new AbortController();
      const answered = fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'slow answer' }] }),
        signal: leaving.signal,
      }).catch((err: Error) => err.name);
      await until(() => gw.fake.calls.count === 1, 'the call upstream');
      leaving.abort();
      assert.equal(await answered, 'AbortError');
      await until(() => gw.fake.calls.aborted === 1, 'the upstream request to be aborted');
      await until(async () => {
        await gw.service.dataPlane.usage.flush();
        const rows = await gw.service.deps.db.selectFrom('usage_records').select(['status', 'error_code']).where('tenant_id', '=', tenant.tenantId).execute();
        return rows.length === 1 && rows[0]!.status === 499 && rows[0]!.error_code === 'client_closed_request';
      }, 'the usage record of the aborted call');
    });

    test('SIGTERM-style close: readiness fails, an in-flight stream finishes whole, its usage record is written, then the process may exit', async (t) => {
      const gw = await startLiveGateway(kind);
      // Whatever fails below, the fake and the database go (the service closes itself in the test).
      t.after(async () => {
        await gw.fake.close();
        await gw.db.drop();
      });
      const tenant = await gw.tenant();
      gw.fake.setBehaviour({ chunkDelayMs: 40, chunks: 10, promptTokens: 11, completionTokens: 10 }, { requests: 1 });
      const { data: stream, response } = await tenant.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a b c d e f g h i j' }], stream: true })
        .withResponse();
      const requestId = response.headers.get('x-gateway-request-id')!;
      const closing = gw.service.close();
      const ready = await fetch(`${gw.url}/readyz`).catch(() => undefined);
      assert.ok(!ready || ready.status === 503, 'no longer ready once draining');
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'echo: a b c d e f g h i j', 'the stream was drained, not cut');
      // The client keeps its connection alive; shutdown must not wait out the keep-alive timeout (72 s).
      const late = new Promise<'late'>((resolve) => setTimeout(resolve, 10_000, 'late').unref());
      assert.notEqual(await Promise.race([closing, late]), 'late', 'close() finished soon after the last stream');
      // The service is closed; its database holds the record.
      const { db } = await openDatabase<GatewayTables>({ url: gw.db.url, sqlitePath: `${gw.db.dataDir}/gateway.sqlite` });
      try {
        await migrateToLatest(db, gatewayMigrations);
        const row = await db.selectFrom('usage_records').selectAll().where('request_id', '=', requestId).executeTakeFirst();
        assert.ok(row, 'usage flushed before shutdown ended');
        assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.status], [11, 10, 200]);
      } finally {
        await closeDatabase(db);
      }
    });

    test('an answer leaves only once its usage record is in the journal on disk: a call answered 200, and one refused by the provider', async (t) => {
      // The usage writer keeps records a minute: until then the journal alone holds them.
      const gw = await startLiveGateway(kind, { GATEWAY_USAGE_FLUSH_MS: '60000', GATEWAY_USAGE_BATCH_SIZE: '10000' });
      t.after(() => gw.close());
      const tenant = await gw.tenant();
      const dir = join(gw.db.dataDir, 'usage-journal');
      const journaled = () =>
        readdirSync(dir).flatMap((f) =>
          readFileSync(join(dir, f), 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => decodeUsageRow(l).request_id),
        );
      const call = () =>
        gw.service.runtime.app.inject({
          method: 'POST',
          url: '/v1/chat/completions',
          // Exactly the model asked for: a refusal is the answer, not a fallback's.
          headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json', 'x-gateway-no-route': 'true' },
          payload: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'journaled?' }] },
        });
      const answered = await call();
      // Read at once, in the same turn of the event loop as the answer's arrival.
      const onDisk = journaled();
      assert.equal(answered.statusCode, 200);
      assert.ok(onDisk.includes(String(answered.headers['x-gateway-request-id'])), 'the 200 was journaled before it left');

      gw.fake.setBehaviour({ fault: '401' }, { requests: 1 });
      const refused = await call();
      const onDiskAfter = journaled();
      assert.ok(refused.statusCode >= 400, `refused: ${refused.statusCode}`);
      assert.ok(onDiskAfter.includes(String(refused.headers['x-gateway-request-id'])), 'the refusal was journaled before it left');

      // Calls answered in the same turn share one write; every one of them is there.
      const many = await Promise.all(Array.from({ length: 20 }, () => call()));
      const all = journaled();
      for (const res of many) assert.ok(all.includes(String(res.headers['x-gateway-request-id'])));
    });

    test("tenant isolation on the data plane: B's key never uses A's provider keys", async (t) => {
      const gw = await startLiveGateway(kind);
      t.after(() => gw.close());
      await gw.tenant({ providers: ['openai'] });
      const b = await gw.tenant({ providers: ['anthropic'] });
      await assert.rejects(
        b.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
        (err: unknown) => err instanceof OpenAI.BadRequestError && (err as { code?: string }).code === 'provider_key_missing',
      );
      gw.fake.reset();
      await b.openai.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'x' }] });
      assert.match(String(gw.fake.calls.last()?.headers['x-api-key']), /^anthropic-secret-key-/);
    });
  });
}

describe('replicas sharing PostgreSQL and Redis', { skip: POSTGRES_URL && REDIS_URL ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL' }, () => {
  test('a key revoked on one replica is refused by the other on its very next request', async (t) => {
    const a = await startLiveGateway('postgres', { REDIS_URL: REDIS_URL! });
    t.after(() => a.close());
    const tenant = await a.tenant({ providers: ['openai'] });
    // Replica B: the same database and Redis, its own process state.
    const { url: bUrl } = await startReplica(a, { REDIS_URL: REDIS_URL! });
    const viaB = new OpenAI({ baseURL: `${bUrl}/v1`, apiKey: tenant.apiKey, maxRetries: 0 });
    const ask = () => viaB.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
    await ask(); // B now has the key in its in-process cache
    await ask();
    const revoked = await a.api(`/api/v1/tenant/api-keys/${tenant.apiKeyId}`, { method: 'DELETE', token: tenant.session });
    assert.equal(revoked.status, 204);
    // Pub/sub delivery is asynchronous; the next request after delivery is refused (bounded wait, not a sleep).
    await until(async () => {
      try {
        await ask();
        return false;
      } catch (err) {
        return err instanceof OpenAI.AuthenticationError;
      }
    }, 'replica B to refuse the revoked key');
  });
});
