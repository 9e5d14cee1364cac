import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { cacheKey } from '../../../src/gateway/cache/cache-key.ts';
import { POSTGRES_URL, REDIS_URL } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, startReplica } from '../../helpers/gateway-service.ts';
import { MODEL, streamed, textOf } from './cache-helpers.ts';

const LEASE_MS = 400;
const ask = (content: string) => ({ model: MODEL, messages: [{ role: 'user' as const, content }], temperature: 0 });

describe('dedup across two replicas sharing PostgreSQL and Redis', { skip: POSTGRES_URL && REDIS_URL ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL' }, () => {
  let a: LiveGateway;
  let redis: Redis;
  let tenant: LiveTenant;
  let viaB: OpenAI;
  const env = { REDIS_URL: REDIS_URL!, GATEWAY_CACHE_ENABLED: 'true', GATEWAY_CACHE_DEDUP_LEASE_MS: String(LEASE_MS) };

  before(async () => {
    a = await startLiveGateway('postgres', env);
    const { url: bUrl } = await startReplica(a, env);
    tenant = await a.tenant({ providers: ['openai'] });
    viaB = new OpenAI({ baseURL: `${bUrl}/v1`, apiKey: tenant.apiKey, maxRetries: 0 });
    redis = new Redis(REDIS_URL!);
  });
  after(async () => {
    redis.disconnect();
    await a.close();
  });

  test('identical requests on both replicas make one upstream call, streamed and not; the answer is then a hit on either', async () => {
    a.fake.reset();
    a.fake.setBehaviour({ latencyMs: 400 });
    const plain = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? viaB : tenant.openai).chat.completions.create(ask('across replicas')).withResponse()),
    );
    assert.equal(a.fake.calls.count, 1, 'one upstream call for both replicas');
    assert.ok(plain.every((r) => r.data.choices[0]?.message.content === 'echo: across replicas'));
    assert.equal(plain.filter((r) => r.response.headers.get('x-gateway-cache') === 'miss').length, 1);

    a.fake.setBehaviour({ latencyMs: 100, chunkDelayMs: 40, chunks: 5 });
    const streams = await Promise.all(
      Array.from({ length: 40 }, (_, i) => streamed(i % 2 ? viaB : tenant.openai, { ...ask('streams across replicas'), stream: true })),
    );
    assert.equal(a.fake.calls.count, 2);
    assert.ok(streams.every((s) => textOf(s.chunks) === 'echo: streams across replicas'));
    assert.ok(streams.every((s) => s.chunks.length >= 6), 'followers on the other replica get the chunks one by one too');
    for (const client of [tenant.openai, viaB]) {
      const { response } = await client.chat.completions.create(ask('streams across replicas')).withResponse();
      assert.equal(response.headers.get('x-gateway-cache'), 'hit', 'the shared Redis store answers on both replicas');
    }
    assert.equal(a.fake.calls.count, 2);
  });

  test('a leader replica that dies before answering: its followers take over once its lock lapses, and answer', async () => {
    a.fake.reset();
    const body = ask('the leader died');
    const lockKey = `gw:dedup:${tenant.tenantId}:${cacheKey(tenant.tenantId, MODEL, body)}`;
    // A replica that took the lock and died: nobody renews it, nothing is published.
    await redis.set(lockKey, 'ghost-flight', 'PX', 2 * LEASE_MS);
    const started = Date.now();
    const answers = await Promise.all([tenant.openai.chat.completions.create(body), viaB.chat.completions.create(body)]);
    assert.ok(answers.every((r) => r.choices[0]?.message.content === 'echo: the leader died'));
    assert.equal(a.fake.calls.count, 1, 'one of the followers became the leader; the other followed it');
    assert.ok(Date.now() - started < 10 * LEASE_MS, 'no hang: bounded by the lease');
  });

  test('a leader replica that dies mid-stream: a follower whose stream started gets a clear error event, never a hang', async () => {
    a.fake.reset();
    const body = { ...ask('half an answer'), stream: true as const };
    const lockKey = `gw:dedup:${tenant.tenantId}:${cacheKey(tenant.tenantId, MODEL, body)}`;
    const streamKey = `${lockKey}:ghost-flight`;
    await redis.set(lockKey, 'ghost-flight', 'PX', LEASE_MS);
    const chunk = { id: 'chatcmpl-ghost', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'half' }, finish_reason: null }] };
    await redis.xadd(streamKey, '0-1', 't', 'o', 'd', '');
    await redis.xadd(streamKey, '0-2', 't', 'e', 'd', `data: ${JSON.stringify(chunk)}\n\n`);
    await redis.pexpire(streamKey, 10_000);
    const received: string[] = [];
    await assert.rejects(
      (async () => {
        const { data } = await viaB.chat.completions.create(body).withResponse();
        for await (const c of data) received.push(c.choices[0]?.delta.content ?? '');
      })(),
      (err: unknown) => err instanceof OpenAI.APIError && (err as { code?: string }).code === 'dedup_leader_lost',
    );
    assert.deepEqual(received, ['half'], 'what the dead leader had published arrived first');
    assert.equal(a.fake.calls.count, 0);
  });
});
