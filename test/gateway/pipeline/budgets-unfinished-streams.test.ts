import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MODELS } from '../../../src/gateway/catalog/models.ts';
import type { UsageRecordRow } from '../../../src/gateway/schema.ts';
import { estimatePromptTokens } from '../../../src/gateway/tokens.ts';
import { DB_KINDS, type DbKind } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';
import { newClock, until } from './budget-calls.ts';

/**
 * Defect 10 of issue 31: a stream the client cut off settled 0 tokens,
 * though the provider generated (and bills) what it had sent: six aborted
 * streams, each after 14 content chunks, under a 3,000 tokens/day limit
 * left the ledger at 8. A stream that ends before the provider's usage now
 * settles the prompt plus the completion relayed, and its record (499 when
 * the client left) says so: `estimated`.
 */
const MINI = MODELS.find((m) => m.provider === 'openai' && m.id === 'gpt-4o-mini')!;
const HAIKU = MODELS.find((m) => m.provider === 'anthropic' && m.id === 'claude-haiku-4-5')!;
const MESSAGES = [{ role: 'user' as const, content: 'tell me a long story' }];
/** The prompt as the gateway estimates it, which an OpenAI stream cut short never got from the provider. */
const PROMPT = estimatePromptTokens(MESSAGES);
/** 30 deltas of 10 characters: each relayed delta is ceil(10 / 3) = 4 tokens at most, 10 characters 3.33. */
const TEXT = 'abcdefghij'.repeat(30);
const CHUNKS = 30;
const DELTA_CHARS = 10;
/** Completion tokens counted for `n` deltas relayed (docs/gateway-budgets.md: characters over 3, at least one per delta). */
const counted = (n: number) => Math.max(n, Math.ceil((n * DELTA_CHARS) / 3));

async function live(kind: DbKind, t: { after: (fn: () => Promise<void>) => void }, env: Record<string, string> = {}) {
  const gw = await startLiveGateway(kind, { GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0', ...env }, { clock: newClock() });
  t.after(() => gw.close());
  const tenant = await gw.tenant();
  const set = await gw.api('/api/v1/tenant', { method: 'PATCH', token: tenant.session, body: { settings: { limits: { tokens_per_day: 1_000_000 } } } });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  return { gw, tenant };
}

/** The tenant's tokens/day counter once nothing is reserved any more (a settle is not awaited by the answer). */
async function settledTokens(gw: LiveGateway, tenant: LiveTenant): Promise<number> {
  let used = -1;
  await until(async () => {
    const usage = (await gw.api('/api/v1/tenant/limits', { token: tenant.session })).body.tenant.usage.tokens_per_day;
    used = usage.used;
    return usage.reserved === 0;
  }, 'the reservation to be settled');
  return used;
}

/** Streams through the OpenAI SDK, aborting after `abortAfter` content chunks (or reading to the end or error); returns the call's id and what arrived. */
async function stream(tenant: LiveTenant, model: string, abortAfter?: number): Promise<{ id: string; contentChunks: number; failed: unknown }> {
  const controller = new AbortController();
  const { data, response } = await tenant.openai.chat.completions
    .create({ model, messages: MESSAGES, max_tokens: 500, stream: true }, { signal: controller.signal })
    .withResponse();
  let contentChunks = 0;
  let failed: unknown;
  try {
    for await (const chunk of data) {
      if (chunk.choices[0]?.delta.content) contentChunks++;
      if (contentChunks === abortAfter) controller.abort();
    }
  } catch (err) {
    failed = err;
  }
  return { id: response.headers.get('x-gateway-request-id')!, contentChunks, failed };
}

const usd = (row: UsageRecordRow, entry: { input: number; output: number }) => (row.prompt_tokens * entry.input + row.completion_tokens * entry.output) / 1e6;

for (const kind of DB_KINDS) {
  describe(`what the provider billed is what the budget counts: streams cut short (${kind})`, () => {
    for (const cache of ['off', 'on'] as const) {
      test(`the client aborts an OpenAI stream after 3 chunks (cache ${cache}): 499, the prompt plus the completion relayed, in the record and the ledger`, async (t) => {
        // With the cache on, every stream runs in an in-flight dedup flight of its own (cache/in-flight.ts).
        const { gw, tenant } = await live(kind, t, { GATEWAY_CACHE_ENABLED: cache === 'on' ? 'true' : 'false' });
        gw.fake.setBehaviour({ text: TEXT, chunks: CHUNKS, chunkDelayMs: 150, promptTokens: 999, completionTokens: 999 }, { requests: 1 });
        const { id, contentChunks } = await stream(tenant, 'openai/gpt-4o-mini', 3);
        assert.equal(contentChunks, 3, 'the SDK stops reading at the abort');
        const row = await usageRecord(gw, id);
        const used = await settledTokens(gw, tenant);
        assert.equal(row.status, 499);
        assert.equal(row.error_code, 'client_closed_request');
        assert.equal(row.usage_flags, 'estimated');
        assert.equal(row.prompt_tokens, PROMPT, "the gateway's own prompt estimate: OpenAI reports usage only at the end");
        // At least what the client received; at most the whole answer (deltas in flight when it left are counted too).
        assert.ok(row.completion_tokens >= counted(3) && row.completion_tokens <= counted(CHUNKS), `completion ${row.completion_tokens}`);
        assert.ok(Math.abs(row.cost_usd - usd(row, MINI)) < 1e-12 && row.cost_usd > 0, `cost ${row.cost_usd}`);
        assert.equal(used, row.prompt_tokens + row.completion_tokens, 'the ledger counts what the record says');
      });
    }

    test('the provider cuts an OpenAI stream after 4 chunks: settled at the prompt plus those 4 chunks', async (t) => {
      const { gw, tenant } = await live(kind, t);
      gw.fake.setBehaviour({ text: TEXT, chunks: CHUNKS, chunkDelayMs: 5, fault: 'drop', faultAfterChunks: 4 }, { requests: 1 });
      const { id, contentChunks, failed } = await stream(tenant, 'openai/gpt-4o-mini');
      assert.ok(failed instanceof Error, 'the SDK raises the error event the gateway ends the stream with');
      assert.equal(contentChunks, 4);
      const row = await usageRecord(gw, id);
      assert.ok(row.status >= 500, `status ${row.status}`);
      assert.ok(row.error_code);
      assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.usage_flags], [PROMPT, counted(4), 'estimated']);
      assert.ok(Math.abs(row.cost_usd - usd(row, MINI)) < 1e-12);
      assert.equal(await settledTokens(gw, tenant), PROMPT + counted(4));
    });

    test("an Anthropic stream ended by an error event after 4 chunks: the provider's own prompt count (message_start) plus those 4 chunks", async (t) => {
      const { gw, tenant } = await live(kind, t);
      gw.fake.setBehaviour({ text: TEXT, chunks: CHUNKS, chunkDelayMs: 5, fault: 'stream-error', faultAfterChunks: 4, promptTokens: 77 }, { requests: 1 });
      const { id, contentChunks, failed } = await stream(tenant, 'anthropic/claude-haiku-4-5');
      assert.ok(failed instanceof Error);
      assert.equal(contentChunks, 4);
      const row = await usageRecord(gw, id);
      assert.ok(row.status >= 500, `status ${row.status}`);
      assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.usage_flags], [77, counted(4), 'estimated']);
      assert.ok(Math.abs(row.cost_usd - usd(row, HAIKU)) < 1e-12);
      assert.equal(await settledTokens(gw, tenant), 77 + counted(4));
    });

    test("a stream that completes keeps the provider's own counts, unflagged", async (t) => {
      const { gw, tenant } = await live(kind, t);
      gw.fake.setBehaviour({ text: TEXT, chunks: CHUNKS, promptTokens: 21, completionTokens: 60 }, { requests: 1 });
      const { id, contentChunks, failed } = await stream(tenant, 'openai/gpt-4o-mini');
      assert.equal(failed, undefined);
      assert.equal(contentChunks, CHUNKS);
      const row = await usageRecord(gw, id);
      assert.deepEqual([row.status, row.prompt_tokens, row.completion_tokens, row.usage_flags], [200, 21, 60, null]);
      assert.equal(await settledTokens(gw, tenant), 81);
    });
  });
}
