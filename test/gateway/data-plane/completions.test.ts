import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { catalogEntry } from '../../../src/gateway/catalog/catalog.ts';
import { costUsd } from '../../../src/gateway/catalog/cost.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

const mini = catalogEntry('openai', 'gpt-4o-mini')!;
const haiku = catalogEntry('anthropic', 'claude-haiku-4-5')!;

for (const kind of DB_KINDS) {
  describe(`data plane through the OpenAI SDK (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      gw = await startLiveGateway(kind);
      t = await gw.tenant();
    });
    after(() => gw.close());

    test('a client-chosen X-Request-Id is not the call id: two calls sending the same one both get their own usage record', async () => {
      const ids: string[] = [];
      for (const content of ['first with a chosen id', 'second with the same id']) {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', 'x-request-id': 'chosen-by-the-client' },
          body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }] }),
        });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
        const id = res.headers.get('x-gateway-request-id')!;
        assert.notEqual(id, 'chosen-by-the-client');
        assert.equal(res.headers.get('x-request-id'), id);
        ids.push(id);
      }
      assert.notEqual(ids[0], ids[1]);
      const rows = await Promise.all(ids.map((id) => usageRecord(gw, id)));
      assert.deepEqual(
        rows.map((r) => r.status),
        [200, 200],
        'each call is recorded (with the client id as the key, the second was dropped by ON CONFLICT DO NOTHING)',
      );
    });

    test('a completion: the answer, the X-Gateway-* headers, the cost at catalog prices, the usage record', async () => {
      gw.fake.setBehaviour({ promptTokens: 1000, cachedTokens: 400, completionTokens: 50, reasoningTokens: 20 }, { requests: 1 });
      const { data, response } = await t.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }], temperature: 0.2 })
        .withResponse();
      assert.equal(data.choices[0]?.message.content, 'echo: hello there');
      const sent = gw.fake.calls.last()!;
      assert.equal((sent.body as { model: string }).model, 'gpt-4o-mini', 'the provider gets its own model id');
      assert.equal((sent.body as { temperature: number }).temperature, 0.2, 'fields pass through');
      assert.match(String(sent.headers.authorization), /^Bearer openai-secret-key-/, "the tenant's provider key is sent");
      const h = response.headers;
      const requestId = h.get('x-gateway-request-id')!;
      assert.ok(requestId);
      assert.equal(h.get('x-gateway-provider'), 'openai');
      assert.match(h.get('x-gateway-model')!, /^openai\//);
      assert.equal(h.get('x-gateway-cache'), 'bypass');
      assert.equal(h.get('x-gateway-tokens-saved'), '0');
      assert.equal(h.get('x-gateway-compaction'), 'none');
      const usage = { promptTokens: 1000, cachedTokens: 400, cacheWriteTokens: 0, completionTokens: 50, reasoningTokens: 20 };
      const expected = costUsd(usage, mini)!;
      assert.ok(Math.abs(Number(h.get('x-gateway-cost')) - expected) < 1e-12, `${h.get('x-gateway-cost')} vs ${expected}`);
      assert.ok(Number(h.get('x-gateway-overhead-ms')) >= 0);
      const row = await usageRecord(gw, requestId);
      assert.equal(row.tenant_id, t.tenantId);
      assert.equal(row.key_id, t.apiKeyId);
      assert.equal(row.model_requested, 'openai/gpt-4o-mini');
      assert.equal(row.provider, 'openai');
      assert.equal(row.status, 200);
      assert.deepEqual(
        [row.prompt_tokens, row.cached_tokens, row.completion_tokens, row.reasoning_tokens, row.stream],
        [1000, 400, 50, 20, 0],
      );
      assert.ok(Math.abs(row.cost_usd - expected) < 1e-12);
      // The provider's own caching (400 tokens read from OpenAI's automatic cache): its own header and column, apart from the gateway's saving.
      const providerCache = h.get('x-gateway-provider-cache-saved');
      assert.match(providerCache ?? '', /^-?\d/, 'a number');
      assert.ok(Math.abs(Number(providerCache) - row.saved_provider_cache_usd) < 1e-12, `${providerCache} vs ${row.saved_provider_cache_usd}`);
      assert.ok(Math.abs(Number(h.get('x-gateway-cost-saved')) - row.cost_saved_usd) < 1e-12);
      assert.equal(row.request_body, null, 'bodies are not stored unless the tenant turns it on');
      const key = await gw.service.deps.db.selectFrom('api_keys').select('last_used_at').where('id', '=', t.apiKeyId).executeTakeFirstOrThrow();
      assert.ok(key.last_used_at, 'the key shows when it was last used');
    });

    test("a provider key replaced on the control plane is the one the very next call sends", async () => {
      const tenant = await gw.tenant({ providers: ['openai'] });
      const ask = () => tenant.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'which key?' }] });
      await ask();
      assert.match(String(gw.fake.calls.last()!.headers.authorization), /^Bearer openai-secret-key-/);
      const replaced = await gw.api('/api/v1/tenant/provider-keys', {
        token: tenant.session,
        body: { provider: 'openai', key: 'openai-replacement-key-XYZW', base_url: `${gw.fake.url}/v1` },
      });
      assert.equal(replaced.status, 201);
      await ask();
      assert.equal(gw.fake.calls.last()!.headers.authorization, 'Bearer openai-replacement-key-XYZW', 'not the key the first call went with');
    });

    test('a bare model id resolves when one keyed provider lists it', async () => {
      const answer = await t.openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'bare' }] });
      assert.equal(answer.choices[0]?.message.content, 'echo: bare');
    });

    test("a complete answer is framed as JSON with its x-request-id, and the service's request counter counts it", async () => {
      const completions = async () => {
        const text = await fetch(`${gw.url}/metrics`).then((r) => r.text());
        const line = text
          .split('\n')
          .find((l) => l.startsWith('gateway_http_requests_total{') && l.includes('route="/v1/chat/completions"') && l.includes('method="POST"') && l.includes('status="200"'));
        return line ? Number(line.split(' ').at(-1)) : 0;
      };
      const before = await completions();
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'héllo ☃' }] }),
      });
      const text = await res.text();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(Number(res.headers.get('content-length')), Buffer.byteLength(text), 'the length in bytes, not in characters');
      assert.equal(res.headers.get('x-request-id'), res.headers.get('x-gateway-request-id'));
      assert.equal((JSON.parse(text) as { choices: { message: { content: string } }[] }).choices[0]?.message.content, 'echo: héllo ☃');
      assert.equal(await completions(), before + 1, 'the onResponse hooks ran');
    });

    test('X-Gateway-Session-Id and X-Gateway-Tag are recorded', async () => {
      const { response } = await t.openai.chat.completions
        .create(
          { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'tagged' }] },
          { headers: { 'X-Gateway-Session-Id': 'conv-42', 'X-Gateway-Tag': 'nightly batch' } },
        )
        .withResponse();
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.session_id, row.tag], ['conv-42', 'nightly batch']);
    });

    test('a stream with include_usage: chunks as they come, a usage chunk with cost, [DONE]; headers before the first byte', async () => {
      gw.fake.setBehaviour({ promptTokens: 200, completionTokens: 3, chunkDelayMs: 5 }, { requests: 1 });
      const { data: stream, response } = await t.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'one two three' }], stream: true, stream_options: { include_usage: true } })
        .withResponse();
      assert.equal(response.headers.get('x-gateway-cost'), 'pending');
      assert.equal(response.headers.get('x-gateway-cost-saved'), 'pending');
      assert.equal(response.headers.get('x-gateway-provider-cache-saved'), 'pending');
      assert.equal(response.headers.get('x-gateway-provider'), 'openai');
      assert.match(response.headers.get('content-type')!, /^text\/event-stream/);
      let text = '';
      let usage: (Record<string, unknown> & { cost?: number }) | undefined;
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage as unknown as typeof usage;
      }
      assert.equal(text, 'echo: one two three');
      assert.ok(chunks >= 4, 'several chunks, not one lump');
      assert.equal(usage?.['prompt_tokens'], 200);
      const expected = costUsd({ promptTokens: 200, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 3, reasoningTokens: 0 }, mini)!;
      assert.ok(Math.abs((usage?.cost ?? -1) - expected) < 1e-12, 'usage.cost in USD, as OpenRouter sends it');
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.stream, row.prompt_tokens, row.completion_tokens, row.status], [1, 200, 3, 200]);
      assert.ok(Math.abs(row.cost_usd - expected) < 1e-12, 'the final cost is in the record');
    });

    test('a stream without include_usage: no usage chunk for the client, but the provider was asked and the record has it', async () => {
      gw.fake.setBehaviour({ promptTokens: 77, completionTokens: 2 }, { requests: 1 });
      const { data: stream, response } = await t.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'quiet please' }], stream: true })
        .withResponse();
      let sawUsage = false;
      for await (const chunk of stream) if (chunk.usage) sawUsage = true;
      assert.equal(sawUsage, false);
      const sent = gw.fake.calls.last()!.body as { stream_options?: { include_usage?: boolean } };
      assert.equal(sent.stream_options?.include_usage, true, 'usage is asked for, for the cost');
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.prompt_tokens, row.completion_tokens], [77, 2]);
    });

    test('Anthropic: translated both ways, the key as x-api-key with anthropic-version, cache reads and writes priced', async () => {
      gw.fake.setBehaviour({ promptTokens: 100, cachedTokens: 300, cacheCreationTokens: 50, completionTokens: 7 }, { requests: 1 });
      const { data, response } = await t.openai.chat.completions
        .create({
          model: 'anthropic/claude-haiku-4-5',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'hi claude' },
          ],
          stop: ['END'],
        })
        .withResponse();
      assert.equal(data.object, 'chat.completion');
      assert.equal(data.choices[0]?.message.content, 'echo: hi claude');
      assert.equal(data.choices[0]?.finish_reason, 'stop');
      assert.equal(data.usage?.prompt_tokens, 450, 'input + cache reads + cache writes');
      const sent = gw.fake.calls.last()!;
      assert.equal(sent.route, 'anthropic.messages');
      assert.match(String(sent.headers['x-api-key']), /^anthropic-secret-key-/);
      assert.ok(sent.headers['anthropic-version']);
      const body = sent.body as { system: unknown; max_tokens: number; stop_sequences: string[]; model: string };
      assert.equal(body.model, 'claude-haiku-4-5');
      assert.ok(JSON.stringify(body.system).includes('Be brief.'));
      assert.equal(body.max_tokens, 4096, 'the documented default when the client gave none');
      assert.deepEqual(body.stop_sequences, ['END']);
      const expected = costUsd({ promptTokens: 450, cachedTokens: 300, cacheWriteTokens: 50, completionTokens: 7, reasoningTokens: 0 }, haiku)!;
      assert.ok(Math.abs(Number(response.headers.get('x-gateway-cost')) - expected) < 1e-12);
      const row = await usageRecord(gw, response.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.cached_tokens, row.cache_write_tokens], [300, 50]);
    });

    test('Anthropic tool calls, streamed: tool_calls deltas with JSON-string arguments and finish_reason tool_calls', async () => {
      const stream = await t.openai.chat.completions.create({
        model: 'anthropic/claude-haiku-4-5',
        messages: [{ role: 'user', content: 'weather in Oslo' }],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        stream: true,
      });
      let args = '';
      let name = '';
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        const call = chunk.choices[0]?.delta.tool_calls?.[0];
        if (call?.function?.name) name = call.function.name;
        args += call?.function?.arguments ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(name, 'get_weather');
      assert.equal(typeof JSON.parse(args).city, 'string');
      assert.equal(finish, 'tool_calls');
      const sent = gw.fake.calls.last()!.body as { tool_choice: unknown; tools: { input_schema: unknown }[] };
      assert.deepEqual(sent.tool_choice, { type: 'tool', name: 'get_weather' });
      assert.ok(sent.tools[0]?.input_schema);
    });

    test('a tenant that turns body storage on finds prompt and answer in its request log, streams included; off again, nothing is kept', async () => {
      const own = await gw.tenant({ providers: ['openai'] });
      const on = await gw.api('/api/v1/tenant', { method: 'PATCH', token: own.session, body: { store_bodies: true } });
      assert.equal(on.status, 200);
      const { response } = await own.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'keep me' }] })
        .withResponse();
      const { data: stream, response: streamed } = await own.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'keep the stream' }], stream: true })
        .withResponse();
      for await (const _ of stream);
      for (const [res, text] of [[response, 'keep me'], [streamed, 'keep the stream']] as const) {
        const id = res.headers.get('x-gateway-request-id')!;
        await usageRecord(gw, id);
        const detail = await gw.api(`/api/v1/tenant/requests/${id}`, { token: own.session });
        assert.equal(detail.status, 200);
        assert.ok(String(detail.body.request_body).includes(text), 'the prompt is kept');
        const kept = String(detail.body.response_body);
        if (res === streamed) assert.ok(kept.includes('chat.completion.chunk') && kept.endsWith('data: [DONE]\n\n'), 'the stream is kept as sent');
        else assert.equal(JSON.parse(kept).choices[0].message.content, `echo: ${text}`, 'the answer is kept');
      }
      await gw.api('/api/v1/tenant', { method: 'PATCH', token: own.session, body: { store_bodies: false } });
      const { response: after } = await own.openai.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'forget me' }] })
        .withResponse();
      const row = await usageRecord(gw, after.headers.get('x-gateway-request-id')!);
      assert.deepEqual([row.request_body, row.response_body], [null, null], 'turned off: the very next call keeps nothing');
    });

    test('GET /v1/models lists the catalog models of the providers the tenant has keys for', async () => {
      const only = await gw.tenant({ providers: ['anthropic'] });
      const list = await only.openai.models.list();
      const ids = list.data.map((m) => m.id);
      assert.equal(ids[0], 'auto', 'model auto (routing) comes first');
      assert.ok(ids.length > 1);
      assert.ok(ids.slice(1).every((id) => id.startsWith('anthropic/')), ids.join());
    });

    test('health, readiness and metrics need no key', async () => {
      assert.equal((await gw.api('/healthz')).status, 200);
      assert.equal((await gw.api('/readyz')).status, 200);
      const metrics = await fetch(`${gw.url}/metrics`).then((r) => r.text());
      assert.match(metrics, /gateway_calls_total\{status="200",model="openai\/gpt-4o-mini",provider="openai",cache="bypass"\} \d+/);
      assert.match(metrics, /gateway_overhead_seconds_bucket/);
      assert.match(metrics, /gateway_tokens_total\{kind="prompt"/);
      assert.match(metrics, /gateway_cost_usd_total/);
    });
  });
}
