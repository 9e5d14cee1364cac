import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import { MAX_TOKEN_COUNT } from '../../../src/gateway/providers/usage-counts.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/**
 * Defect 4 of issue 31: an upstream answering `usage: {prompt_tokens: 1e308,
 * completion_tokens: 1e308}` made the cost Infinity (X-Gateway-Cost:
 * Infinity), its usage record could not be written, and its batch, put back
 * at the head of the queue forever, kept every later record of every tenant
 * out of the database. Counts are now whole numbers from 0 to 10^9, clamped
 * and flagged otherwise, in both wire formats, streamed or not.
 */
const mini = catalogEntry('openai', 'gpt-4o-mini')!;
const haiku = catalogEntry('anthropic', 'claude-haiku-4-5')!;
const HUGE_OPENAI = { prompt_tokens: 1e308, completion_tokens: 1e308 };
const HUGE_ANTHROPIC = { input_tokens: 1e308, output_tokens: 1e308 };
/** What the clamped counts cost: MAX_TOKEN_COUNT of each at the catalog prices. */
const clampedCost = (entry: { input: number; output: number }) => (MAX_TOKEN_COUNT * entry.input + MAX_TOKEN_COUNT * entry.output) / 1e6;

const FINITE_USD = /^\d+(\.\d+)?$/;

for (const kind of DB_KINDS) {
  describe(`token counts from upstreams are validated (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      gw = await startLiveGateway(kind);
      t = await gw.tenant();
    });
    after(() => gw.close());

    /** A normal call after the bad one: its record must land too (the writer is not stuck). */
    async function laterCallIsRecorded(): Promise<void> {
      const { response } = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'after' }] }).withResponse();
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.equal(row.status, 200);
      assert.equal(row.usage_flags, null, "an ordinary call's counts are the provider's own");
    }

    test('OpenAI, not streamed: 1e308 tokens give a finite X-Gateway-Cost, a clamped and flagged record, and later records still land', async () => {
      gw.fake.setBehaviour({ usageFields: HUGE_OPENAI }, { requests: 1 });
      const { response } = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'huge' }] }).withResponse();
      const cost = response.headers.get('x-gateway-cost')!;
      assert.match(cost, FINITE_USD);
      assert.ok(Math.abs(Number(cost) - clampedCost(mini)) < 1e-6, `cost ${cost}`);
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.equal(row.prompt_tokens, MAX_TOKEN_COUNT);
      assert.equal(row.completion_tokens, MAX_TOKEN_COUNT);
      assert.equal(row.usage_flags, 'clamped');
      assert.ok(Math.abs(row.cost_usd - clampedCost(mini)) < 1e-6);
      await laterCallIsRecorded();
    });

    test('OpenAI, streamed: the usage chunk the client asked for has a finite cost; the record is clamped and flagged', async () => {
      gw.fake.setBehaviour({ usageFields: HUGE_OPENAI }, { requests: 1 });
      const { data: stream, response } = await t.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'huge stream' }], stream: true, stream_options: { include_usage: true } })
        .withResponse();
      let usageCost: unknown;
      for await (const chunk of stream) if (chunk.usage) usageCost = (chunk.usage as unknown as { cost?: unknown }).cost;
      assert.equal(typeof usageCost, 'number');
      assert.ok(Number.isFinite(usageCost), `usage.cost ${usageCost}`);
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.usage_flags], [MAX_TOKEN_COUNT, MAX_TOKEN_COUNT, 'clamped']);
      assert.ok(Math.abs(row.cost_usd - clampedCost(mini)) < 1e-6);
      await laterCallIsRecorded();
    });

    test('Anthropic, not streamed and streamed: the prompt (input + cache reads + writes) and the output are clamped too', async () => {
      gw.fake.setBehaviour({ usageFields: { ...HUGE_ANTHROPIC, cache_read_input_tokens: 1e308 } }, { requests: 1 });
      const { response } = await t.openai.chat.completions
        .create({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'huge' }], max_tokens: 50 })
        .withResponse();
      assert.match(response.headers.get('x-gateway-cost')!, FINITE_USD);
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.prompt_tokens, row.cached_tokens, row.completion_tokens, row.usage_flags], [MAX_TOKEN_COUNT, MAX_TOKEN_COUNT, MAX_TOKEN_COUNT, 'clamped']);
      assert.ok(Number.isFinite(row.cost_usd));

      gw.fake.setBehaviour({ usageFields: HUGE_ANTHROPIC }, { requests: 1 });
      const streamed = await t.openai.chat.completions
        .create({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'huge stream' }], max_tokens: 50, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      let usage: { prompt_tokens?: number; completion_tokens?: number; cost?: number } | undefined;
      for await (const chunk of streamed.data) if (chunk.usage) usage = chunk.usage as typeof usage;
      assert.deepEqual([usage?.prompt_tokens, usage?.completion_tokens], [MAX_TOKEN_COUNT, MAX_TOKEN_COUNT], 'the usage chunk the gateway writes has the clamped counts');
      assert.ok(Math.abs(usage!.cost! - clampedCost(haiku)) < 1e-6);
      const streamedRow = await usageRecord(gw, streamed.response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([streamedRow.prompt_tokens, streamedRow.completion_tokens, streamedRow.usage_flags], [MAX_TOKEN_COUNT, MAX_TOKEN_COUNT, 'clamped']);
      await laterCallIsRecorded();
    });

    test('negative, fractional and non-numeric counts: 0, rounded up, 0, each flagged', async () => {
      const cases: [Record<string, unknown>, number, number][] = [
        [{ prompt_tokens: -5, completion_tokens: 2.5 }, 0, 3],
        [{ prompt_tokens: '12', completion_tokens: 7 }, 0, 7],
        [{ prompt_tokens: 12, completion_tokens: { n: 1 } }, 12, 0],
      ];
      for (const [fields, prompt, completion] of cases) {
        gw.fake.setBehaviour({ usageFields: fields }, { requests: 1 });
        const { response } = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'odd' }] }).withResponse();
        assert.match(response.headers.get('x-gateway-cost')!, FINITE_USD);
        const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
        assert.deepEqual([row.prompt_tokens, row.completion_tokens, row.usage_flags], [prompt, completion, 'clamped'], JSON.stringify(fields));
      }
    });

    test('the request log and the metrics show the flag', async () => {
      gw.fake.setBehaviour({ usageFields: HUGE_OPENAI }, { requests: 1 });
      const { response } = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'logged' }] }).withResponse();
      const id = response.headers.get('x-gateway-request-id')!;
      await usageRecord(gw, id);
      const entry = await gw.api(`/api/v1/tenant/requests/${id}`, { token: t.session });
      assert.equal(entry.status, 200);
      assert.equal(entry.body.usage_flags, 'clamped');
      const metrics = await gw.service.deps.metrics.registry.metrics();
      assert.match(metrics, /^gateway_usage_flagged_total\{provider="openai",flag="clamped"\} [1-9]\d*$/m);
    });
  });
}
