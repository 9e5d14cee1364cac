import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type OpenAI from 'openai';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import type { UsageRecordRow } from '../../../src/gateway/schema.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';
import { text, usageRecord } from './prompt-cache-fixtures.ts';

/**
 * Cached-token pricing through the real app and the OpenAI SDK, one test per
 * bug the peers shipped (LESSONS.md): cache-creation tokens charged twice,
 * cached input billed at the full rate, cached_tokens dropped from the final
 * streamed usage; each for both wire formats, streamed and not. The fake
 * reports fixed figures; the gateway's cost (header or usage.cost), the
 * usage it reports and the usage record must price them at the catalog's
 * rates exactly once.
 */

const sonnet = catalogEntry('anthropic', 'claude-sonnet-4-5')!; // 3 input, 0.3 read, 3.75 write, 15 output
const mini = catalogEntry('openai', 'gpt-4o-mini')!; // 0.15 input, 0.075 cached, 0.6 output

interface Case {
  format: 'openai' | 'anthropic';
  model: string;
  /** What the fake reports, in its own format's terms. */
  behaviour: { promptTokens: number; cachedTokens: number; cacheCreationTokens: number; completionTokens: number };
  /** The same usage as the gateway must see it. */
  prompt: number;
  cached: number;
  written: number;
  cost: number;
  saved: number;
}

const CASES: Case[] = [
  {
    format: 'anthropic',
    model: 'anthropic/claude-sonnet-4-5',
    // input_tokens excludes reads and writes: the prompt is 100 + 1000 + 200.
    behaviour: { promptTokens: 100, cachedTokens: 1000, cacheCreationTokens: 200, completionTokens: 50 },
    prompt: 1300,
    cached: 1000,
    written: 200,
    cost: (100 * sonnet.input + 1000 * sonnet.cachedInput + 200 * sonnet.cacheWrite! + 50 * sonnet.output) / 1e6,
    saved: (1000 * (sonnet.input - sonnet.cachedInput) - 200 * (sonnet.cacheWrite! - sonnet.input)) / 1e6,
  },
  {
    format: 'openai',
    model: 'openai/gpt-4o-mini',
    // prompt_tokens includes the cached ones; OpenAI bills no writes.
    behaviour: { promptTokens: 1000, cachedTokens: 400, cacheCreationTokens: 0, completionTokens: 50 },
    prompt: 1000,
    cached: 400,
    written: 0,
    cost: (600 * mini.input + 400 * mini.cachedInput + 50 * mini.output) / 1e6,
    saved: (400 * (mini.input - mini.cachedInput)) / 1e6,
  },
];

/** Long enough for a breakpoint, so the prompt-cache stage has a plan on both formats. */
const MESSAGES: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: text('pricing', 1200) },
  { role: 'user', content: 'question' },
];

interface Seen {
  /** The usage the client got (the completion's, or the stream's last chunk). */
  usage: OpenAI.CompletionUsage & { cost?: number };
  /** X-Gateway-Cost, or the stream's usage.cost. */
  cost: number;
  row: UsageRecordRow;
}

const close = (a: number, b: number) => Math.abs(a - b) < 1e-12;

for (const kind of DB_KINDS) {
  describe(`cached-token pricing through the gateway (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      gw = await startLiveGateway(kind);
      t = await gw.tenant();
    });
    after(() => gw.close());

    async function send(c: Case, stream: boolean): Promise<Seen> {
      gw.fake.setBehaviour(c.behaviour, { requests: 1 });
      const options = { headers: { 'X-Gateway-Session-Id': `pricing-${c.format}` } };
      if (!stream) {
        const { data, response } = await t.openai.chat.completions.create({ model: c.model, messages: MESSAGES }, options).withResponse();
        const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
        return { usage: data.usage!, cost: Number(response.headers.get('x-gateway-cost')), row };
      }
      const { data, response } = await t.openai.chat.completions
        .create({ model: c.model, messages: MESSAGES, stream: true, stream_options: { include_usage: true } }, options)
        .withResponse();
      let usage: Seen['usage'] | undefined;
      for await (const chunk of data) usage = chunk.usage ?? usage;
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.ok(usage, 'the stream ends with a usage chunk');
      return { usage, cost: usage.cost!, row };
    }

    for (const c of CASES) {
      for (const stream of [false, true]) {
        const mode = stream ? 'streamed' : 'not streamed';

        if (c.written > 0) {
          test(`${c.format}, ${mode}: cache writes are charged once, at the write price`, async () => {
            const seen = await send(c, stream);
            assert.equal(seen.row.cache_write_tokens, c.written);
            assert.equal(seen.row.prompt_tokens, c.prompt, 'writes are within the prompt, not added to it again');
            assert.ok(close(seen.cost, c.cost), `client sees ${seen.cost}, expected ${c.cost}`);
            assert.ok(close(seen.row.cost_usd, c.cost), `recorded ${seen.row.cost_usd}, expected ${c.cost}`);
          });
        }

        test(`${c.format}, ${mode}: cached input is billed at the cached price, not the full rate`, async () => {
          const seen = await send(c, stream);
          const fullRate = c.cost + (c.cached * ((c.format === 'anthropic' ? sonnet : mini).input - (c.format === 'anthropic' ? sonnet : mini).cachedInput)) / 1e6;
          assert.ok(!close(seen.cost, fullRate));
          assert.ok(close(seen.cost, c.cost), `client sees ${seen.cost}, expected ${c.cost}`);
          assert.ok(close(seen.row.cost_usd, c.cost));
          // What the cache did is split between the gateway's breakpoints and the provider's own caching: together, all of it.
          const split = seen.row.saved_prompt_cache_usd + seen.row.saved_provider_cache_usd;
          assert.ok(close(split, c.saved), `saved ${seen.row.saved_prompt_cache_usd} + ${seen.row.saved_provider_cache_usd}, expected ${c.saved}`);
          assert.ok(close(seen.row.cost_saved_usd, seen.row.saved_prompt_cache_usd), "the provider's own caching is not in the gateway's saving");
          if (c.format === 'openai') assert.equal(seen.row.saved_prompt_cache_usd, 0, "automatic caching is the provider's");
        });

        test(`${c.format}, ${mode}: cached_tokens reach the final usage and the usage record`, async () => {
          const seen = await send(c, stream);
          assert.equal(seen.usage.prompt_tokens, c.prompt);
          assert.equal(seen.usage.prompt_tokens_details?.cached_tokens, c.cached);
          assert.equal(seen.usage.completion_tokens, 50);
          assert.equal(seen.row.cached_tokens, c.cached);
          assert.equal(seen.row.prompt_tokens, c.prompt);
        });
      }
    }
  });
}
