import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { MODEL, streamed, streamThenLeave, textOf, until, usageRecord } from './cache-helpers.ts';

const ask = (content: string) => ({ model: MODEL, messages: [{ role: 'user' as const, content }], temperature: 0 });

describe('in-flight dedup', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  before(async () => {
    // Failures reach the client as they are (retries and fallbacks have their own suite: fallback.test.ts).
    // 100 calls at once from one tenant: past GATEWAY_TENANT_CONCURRENCY's default of 64, raised here so that all 100 join one flight.
    gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0', GATEWAY_TENANT_CONCURRENCY: '200' });
  });
  after(() => gw.close());
  const fresh = async () => {
    gw.fake.reset();
    t = await gw.tenant({ providers: ['openai'] });
  };

  test('100 concurrent identical requests: one upstream call; one client pays, 99 get `dedup` at no cost, the same answer', async () => {
    await fresh();
    gw.fake.setBehaviour({ latencyMs: 300, promptTokens: 200, completionTokens: 10 });
    const answers = await Promise.all(Array.from({ length: 100 }, () => t.openai.chat.completions.create(ask('all at once')).withResponse()));
    assert.equal(gw.fake.calls.count, 1, 'the provider saw one call');
    const statuses = answers.map((a) => a.response.headers.get('x-gateway-cache'));
    assert.equal(statuses.filter((s) => s === 'miss').length, 1);
    assert.equal(statuses.filter((s) => s === 'dedup').length, 99);
    assert.ok(answers.every((a) => a.data.choices[0]?.message.content === 'echo: all at once'));
    const rows = await Promise.all(answers.map((a) => usageRecord(gw, a.response.headers.get('x-gateway-request-id')!)));
    const payer = rows.find((r) => r.cache_status === 'miss')!;
    assert.equal(payer.prompt_tokens, 200);
    assert.ok(payer.cost_usd > 0);
    for (const row of rows.filter((r) => r.cache_status === 'dedup')) {
      assert.deepEqual([row.cost_usd, row.prompt_tokens, row.saved_tokens, row.status], [0, 0, 210, 200]);
      assert.ok(Math.abs(row.saved_cache_usd - payer.cost_usd) < 1e-12, 'each saved what the one call cost');
    }
    const later = await t.openai.chat.completions.create(ask('all at once')).withResponse();
    assert.equal(later.response.headers.get('x-gateway-cache'), 'hit', 'and the answer was stored once complete');
  });

  test('100 concurrent identical streams: one upstream call, every client gets every chunk as it arrives', async () => {
    await fresh();
    gw.fake.setBehaviour({ latencyMs: 100, chunkDelayMs: 30, chunks: 6 });
    const body = { ...ask('stream to everyone'), stream: true as const };
    const streams = await Promise.all(Array.from({ length: 100 }, (_, i) => streamed(t.openai, i % 2 ? body : { ...body, stream_options: { include_usage: true } })));
    assert.equal(gw.fake.calls.count, 1);
    assert.ok(streams.every((s) => textOf(s.chunks) === 'echo: stream to everyone'));
    assert.ok(streams.every((s) => s.chunks.length >= 7), 'chunk by chunk, not one lump');
    assert.equal(streams.filter((s) => s.headers.get('x-gateway-cache') === 'dedup').length, 99);
    streams.forEach((s, i) => {
      assert.equal(Boolean(s.chunks.at(-1)?.usage), i % 2 === 0, 'the usage chunk only for clients that asked for it');
    });
  });

  test('a late joiner first receives what it missed, then the rest live', async () => {
    await fresh();
    gw.fake.setBehaviour({ chunkDelayMs: 60, chunks: 8 });
    const body = { ...ask('one two three four five six seven eight'), stream: true as const };
    const first = streamed(t.openai, body);
    await until(() => gw.fake.calls.count === 1, 'the first call upstream');
    await new Promise((r) => setTimeout(r, 250));
    const late = await streamed(t.openai, body);
    assert.equal(late.headers.get('x-gateway-cache'), 'dedup');
    assert.deepEqual(late.chunks, (await first).chunks);
    assert.equal(gw.fake.calls.count, 1);
  });

  test('a client that disconnects does not cancel the call for the others; the call is aborted only when no one is left', async () => {
    await fresh();
    gw.fake.setBehaviour({ chunkDelayMs: 40, chunks: 10 });
    const body = JSON.stringify({ ...ask('do not cancel me'), stream: true });
    const leaving = streamThenLeave(gw.url, t.apiKey, body, 2);
    await until(() => gw.fake.calls.count === 1, 'the first call upstream');
    const staying = Array.from({ length: 5 }, () => streamed(t.openai, { ...ask('do not cancel me'), stream: true }));
    await leaving;
    const results = await Promise.all(staying);
    assert.ok(results.every((r) => textOf(r.chunks) === 'echo: do not cancel me'), 'the others got the whole answer');
    assert.equal(gw.fake.calls.count, 1);
    assert.equal(gw.fake.calls.aborted, 0, 'the upstream call was not aborted');

    gw.fake.reset();
    gw.fake.setBehaviour({ chunkDelayMs: 100, chunks: 20 });
    const all = JSON.stringify({ ...ask('everyone leaves'), stream: true });
    await Promise.all(Array.from({ length: 5 }, () => streamThenLeave(gw.url, t.apiKey, all, 2)));
    await until(() => gw.fake.calls.aborted === 1, 'the upstream call to be aborted once the last client left');
    assert.equal(gw.fake.calls.count, 1);
    const next = await streamed(t.openai, { ...ask('everyone leaves'), stream: true });
    assert.equal(next.headers.get('x-gateway-cache'), 'miss', 'the abandoned answer was not stored; a new call starts');
  });

  test('when the client whose call is upstream leaves, one that stayed pays in its place; the leaver is recorded 499 at no cost', async () => {
    await fresh();
    gw.fake.setBehaviour({ latencyMs: 400, promptTokens: 300, completionTokens: 20 });
    const started = Date.now();
    const body = ask('the first one leaves');
    const leaving = new AbortController();
    const first = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: leaving.signal,
    }).catch((err: Error) => err.name);
    await until(() => gw.fake.calls.count === 1, 'the first call upstream');
    const staying = Array.from({ length: 3 }, () => t.openai.chat.completions.create(body).withResponse());
    await new Promise((r) => setTimeout(r, 50));
    leaving.abort();
    assert.equal(await first, 'AbortError');
    const answers = await Promise.all(staying);
    assert.ok(answers.every((a) => a.data.choices[0]?.message.content === 'echo: the first one leaves'));
    assert.equal(gw.fake.calls.count, 1);
    assert.equal(gw.fake.calls.aborted, 0, 'the call went on for the others');
    const rows = await Promise.all(answers.map((a) => usageRecord(gw, a.response.headers.get('x-gateway-request-id')!)));
    const payers = rows.filter((r) => r.cache_status === 'miss');
    assert.equal(payers.length, 1, 'exactly one client that stayed pays');
    assert.equal(payers[0]!.prompt_tokens, 300);
    assert.ok(payers[0]!.cost_usd > 0);
    // The leaver got no answer, so no id: its record is the one of these calls that is not one of the stayers'.
    await gw.service.dataPlane.usage.flush();
    const stayers = new Set(rows.map((r) => r.request_id));
    const ours = await gw.service.deps.db.selectFrom('usage_records').selectAll().where('tenant_id', '=', t.tenantId).where('created_at', '>=', started).execute();
    const others = ours.filter((r) => !stayers.has(r.request_id));
    assert.equal(others.length, 1, 'one record for the leaver');
    const left = others[0]!;
    assert.deepEqual([left.status, left.error_code, left.cost_usd, left.prompt_tokens], [499, 'client_closed_request', 0, 0]);
  });

  test('non-streamed waiters share the answer of a streamed call and the reverse', async () => {
    await fresh();
    gw.fake.setBehaviour({ latencyMs: 150, chunkDelayMs: 20, chunks: 4 });
    const [stream, plain] = await Promise.all([
      streamed(t.openai, { ...ask('mixed shapes'), stream: true }),
      new Promise((r) => setTimeout(r, 50)).then(() => t.openai.chat.completions.create(ask('mixed shapes')).withResponse()),
    ]);
    assert.equal(plain.response.headers.get('x-gateway-cache'), 'dedup');
    assert.equal(plain.data.choices[0]?.message.content, textOf(stream.chunks));
    const [plain2, stream2] = await Promise.all([
      t.openai.chat.completions.create(ask('mixed again')).withResponse(),
      new Promise((r) => setTimeout(r, 50)).then(() => streamed(t.openai, { ...ask('mixed again'), stream: true })),
    ]);
    assert.equal(stream2.headers.get('x-gateway-cache'), 'dedup');
    assert.equal(textOf(stream2.chunks), plain2.data.choices[0]?.message.content);
    assert.equal(gw.fake.calls.count, 2);
  });

  test('when the shared call fails every waiter gets the same OpenAI-shaped error, and nothing is cached', async () => {
    await fresh();
    gw.fake.setBehaviour({ fault: '429', latencyMs: 200, retryAfterS: 3 }, { requests: 1 });
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => t.openai.chat.completions.create(ask('doomed'))));
    assert.equal(gw.fake.calls.count, 1);
    for (const r of results) {
      assert.equal(r.status, 'rejected');
      const err = (r as PromiseRejectedResult).reason;
      assert.ok(err instanceof OpenAI.RateLimitError, String(err));
      assert.equal((err as { code?: string }).code, 'rate_limit_exceeded');
    }
    const ok = await t.openai.chat.completions.create(ask('doomed')).withResponse();
    assert.equal(ok.response.headers.get('x-gateway-cache'), 'miss');
    assert.equal(gw.fake.calls.count, 2);
  });

  test('X-Gateway-No-Cache skips dedup; settings.cache.dedup false turns it off for the tenant', async () => {
    await fresh();
    gw.fake.setBehaviour({ latencyMs: 200 });
    const headers = { headers: { 'X-Gateway-No-Cache': 'true' } };
    await Promise.all(Array.from({ length: 5 }, () => t.openai.chat.completions.create(ask('each on its own'), headers)));
    assert.equal(gw.fake.calls.count, 5);
    await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { cache: { dedup: false } } } });
    const answers = await Promise.all(Array.from({ length: 3 }, () => t.openai.chat.completions.create(ask('no dedup')).withResponse()));
    assert.equal(gw.fake.calls.count, 8);
    assert.ok(answers.every((a) => a.response.headers.get('x-gateway-cache') === 'miss'));
    const hit = await t.openai.chat.completions.create(ask('no dedup')).withResponse();
    assert.equal(hit.response.headers.get('x-gateway-cache'), 'hit', 'the cache still stores and answers');
  });
});
