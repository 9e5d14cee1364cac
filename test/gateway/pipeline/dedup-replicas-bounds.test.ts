import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { cacheKey } from '../../../src/gateway/cache/cache-key.ts';
import { POSTGRES_URL, REDIS_URL } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, startReplica } from '../../helpers/gateway-service.ts';
import { MODEL, streamed, textOf, until } from './cache-helpers.ts';

/**
 * Issue 31, defect 5, across replicas: the Redis Stream through which a
 * leader replica shares a streamed answer keeps a window of it as large as
 * the cache's entry limit (4 KiB here), never the whole answer; a follower
 * that keeps up gets every chunk live, one that comes after the window
 * moved on makes its own call.
 */

const ENTRY_LIMIT = 4096;
const LEASE_MS = 400;
const ask = (content: string) => ({ model: MODEL, messages: [{ role: 'user' as const, content }], temperature: 0 });
const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

describe('dedup across replicas: what Redis keeps of a shared stream is bounded', { skip: POSTGRES_URL && REDIS_URL ? false : 'needs TEST_POSTGRES_URL and TEST_REDIS_URL' }, () => {
  let a: LiveGateway;
  let redis: Redis;
  let tenant: LiveTenant;
  let viaB: OpenAI;
  let viaC: OpenAI;
  const env = { REDIS_URL: REDIS_URL!, GATEWAY_CACHE_ENABLED: 'true', GATEWAY_CACHE_DEDUP_LEASE_MS: String(LEASE_MS), GATEWAY_CACHE_MAX_ENTRY_BYTES: String(ENTRY_LIMIT) };

  before(async () => {
    a = await startLiveGateway('postgres', env);
    const { url: bUrl } = await startReplica(a, env);
    tenant = await a.tenant({ providers: ['openai'] });
    const { url: cUrl } = await startReplica(a, env);
    viaB = new OpenAI({ baseURL: `${bUrl}/v1`, apiKey: tenant.apiKey, maxRetries: 0 });
    viaC = new OpenAI({ baseURL: `${cUrl}/v1`, apiKey: tenant.apiKey, maxRetries: 0 });
    redis = new Redis(REDIS_URL!);
  });
  after(async () => {
    redis.disconnect();
    await a.close();
  });

  /** The characters of every entry the flight's Stream holds now (0 when it has none yet). */
  async function streamChars(lockKey: string): Promise<{ chars: number; firstId: string | undefined }> {
    const keys = (await redis.keys(`${lockKey}:*`)).filter((k) => !k.endsWith(':w'));
    if (keys.length === 0) return { chars: 0, firstId: undefined };
    const entries = await redis.xrange(keys[0]!, '-', '+');
    return { chars: entries.reduce((sum, [, fields]) => sum + fields.join('').length, 0), firstId: entries[0]?.[0] };
  }

  test('a long streamed answer: Redis keeps a window of about the entry limit; a follower that keeps up gets all of it live; clients that come late, on a replica following it or not, make their own call', async () => {
    a.fake.reset();
    const text = words(60, 'r');
    a.fake.setBehaviour({ latencyMs: 400, chunkDelayMs: 50, chunks: 60, text });
    const body = { ...ask('a long shared answer'), stream: true as const };
    const lockKey = `gw:dedup:${tenant.tenantId}:${cacheKey(tenant.tenantId, MODEL, body)}`;
    let most = 0;
    let firstId: string | undefined;
    let received = 0;
    let late: ReturnType<typeof streamed>[] = [];
    const leader = (async () => {
      const { data } = await tenant.openai.chat.completions.create(body).withResponse();
      const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
      for await (const chunk of data) {
        chunks.push(chunk);
        const held = await streamChars(lockKey);
        most = Math.max(most, held.chars);
        firstId = held.firstId ?? firstId;
        // About 30 chunks of 250 characters: the window has moved past the start. Clients on B and C come now.
        if (++received === 30) late = [streamed(viaB, body), streamed(viaC, body)];
      }
      return chunks;
    })();
    await until(() => a.fake.calls.count === 1, 'the call upstream');
    const follower = await streamed(viaB, body);
    const led = await leader;
    const came = await Promise.all(late);

    assert.equal(textOf(led), text);
    assert.equal(follower.headers.get('x-gateway-cache'), 'dedup', 'the follower on B shared the call on A');
    assert.equal(textOf(follower.chunks), text, 'and got every chunk');
    assert.ok(most > 0 && most < ENTRY_LIMIT + 1024, `Redis held at most ${most} characters of an answer of ${JSON.stringify(led).length}`);
    assert.notEqual(firstId, '0-1', 'the start of the answer was trimmed');
    assert.equal(came.length, 2);
    for (const [i, client] of came.entries()) {
      const where = i === 0 ? 'on B (following the call)' : 'on C (reading the trimmed Stream from its start)';
      assert.equal(client.headers.get('x-gateway-cache'), 'miss', `a client ${where} that came after the start was trimmed did not join`);
      assert.equal(textOf(client.chunks), text, `it made its own call and got the whole answer (${where})`);
    }
    assert.equal(a.fake.calls.count, 3);
  });
});
