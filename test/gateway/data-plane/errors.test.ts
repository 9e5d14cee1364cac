import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';

/** A raw request to the data plane, for what the SDK would not send. */
async function raw(gw: LiveGateway, key: string | undefined, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body,
  });
  return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) };
}

/** The OpenAI error shape, exactly. */
function assertOpenAiError(body: unknown, code: string, param: string | null = null) {
  const error = (body as { error: Record<string, unknown> }).error;
  assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(error['code'], code);
  assert.equal(error['param'], param);
  assert.equal(typeof error['message'], 'string');
  assert.ok((error['message'] as string).length > 10);
}

const hello = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

for (const kind of DB_KINDS) {
  describe(`data plane errors (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    before(async () => {
      gw = await startLiveGateway(kind, {
        GATEWAY_BODY_LIMIT_BYTES: String(256 * 1024),
        GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '300',
        GATEWAY_UPSTREAM_IDLE_TIMEOUT_MS: '300',
        // Each provider error as the client sees it when nothing is left to try (retries and fallbacks: test/gateway/pipeline/fallback*.test.ts).
        GATEWAY_RETRIES: '0',
        GATEWAY_DEFAULT_FALLBACKS: '0',
        GATEWAY_BREAKER_FAILURES: '1000',
      });
      t = await gw.tenant();
    });
    after(() => gw.close());

    const create = (client: OpenAI, model = 'openai/gpt-4o-mini') =>
      client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });

    test('a wrong, malformed or missing key: 401, the SDK raises AuthenticationError', async () => {
      for (const apiKey of [`sk-gw-${'A'.repeat(43)}`, 'sk-gw-short', 'nonsense']) {
        const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
        await assert.rejects(create(client), OpenAI.AuthenticationError);
      }
      const none = await raw(gw, undefined, hello);
      assert.equal(none.status, 401);
      assertOpenAiError(none.body, 'missing_api_key');
    });

    test('a console session token used as an API key is named as such', async () => {
      const r = await raw(gw, t.session, hello);
      assert.equal(r.status, 401);
      assertOpenAiError(r.body, 'invalid_api_key');
      assert.match(r.body.error.message, /session token, not an API key/);
    });

    test('an API key used as a session token on the control plane: 401 problem+json', async () => {
      const r = await gw.api('/api/v1/tenant/api-keys', { token: t.apiKey });
      assert.equal(r.status, 401);
      assert.equal(typeof r.body.code, 'string');
    });

    test('a revoked key is refused on the very next request', async () => {
      const created = await gw.api('/api/v1/tenant/api-keys', { token: t.session, body: { name: 'short-lived' } });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: created.body.key, maxRetries: 0 });
      await create(client);
      const revoked = await gw.api(`/api/v1/tenant/api-keys/${created.body.id}`, { method: 'DELETE', token: t.session });
      assert.equal(revoked.status, 204);
      await assert.rejects(create(client), OpenAI.AuthenticationError);
    });

    test('an unknown model: 404 model_not_found (NotFoundError); a provider without a key: 400 provider_key_missing', async () => {
      await assert.rejects(create(t.openai, 'openai-nope/x'), OpenAI.NotFoundError);
      const unknown = await raw(gw, t.apiKey, JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }));
      assert.equal(unknown.status, 404);
      assertOpenAiError(unknown.body, 'model_not_found', 'model');
      const noKey = await raw(gw, t.apiKey, JSON.stringify({ model: 'groq/llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'x' }] }));
      assert.equal(noKey.status, 400);
      assertOpenAiError(noKey.body, 'provider_key_missing', 'model');
      assert.match(noKey.body.error.message, /groq/);
    });

    test('malformed JSON, invalid messages, a wrong type: 400 naming the field', async () => {
      const malformed = await raw(gw, t.apiKey, '{"model": ');
      assert.equal(malformed.status, 400);
      assertOpenAiError(malformed.body, 'malformed_json');
      const empty = await raw(gw, t.apiKey, JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [] }));
      assert.equal(empty.status, 400);
      assert.equal(empty.body.error.param, 'messages');
      const role = await raw(gw, t.apiKey, JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'wizard', content: 'x' }] }));
      assert.equal(role.status, 400);
      assert.match(role.body.error.param, /^messages\.0\.role/);
      const stream = await raw(gw, t.apiKey, JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }));
      assert.equal(stream.status, 400);
      assert.equal(stream.body.error.param, 'stream');
      const noModel = await raw(gw, t.apiKey, JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }));
      assert.equal(noModel.status, 400);
      assert.equal(noModel.body.error.param, 'model');
    });

    test('a body over the limit: 413 in the OpenAI shape; one under it goes through', async () => {
      const big = (n: number) => JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x'.repeat(n) }] });
      const over = await raw(gw, t.apiKey, big(300 * 1024));
      assert.equal(over.status, 413);
      assertOpenAiError(over.body, 'body_too_large');
      const under = await raw(gw, t.apiKey, big(200 * 1024));
      assert.equal(under.status, 200, 'far above the control plane 64 KiB limit');
    });

    test('hostile X-Gateway-Tag and X-Gateway-Session-Id values: 400 invalid_header', async () => {
      for (const value of ['x'.repeat(129), 'tab\there', '']) {
        const r = await raw(gw, t.apiKey, hello, { 'x-gateway-tag': value });
        assert.equal(r.status, 400, JSON.stringify(value));
        assertOpenAiError(r.body, 'invalid_header');
      }
      const r = await raw(gw, t.apiKey, hello, { 'x-gateway-session-id': 'é' });
      assert.equal(r.status, 400);
    });

    test('an unknown /v1 path: 404 in the OpenAI shape', async () => {
      const res = await fetch(`${gw.url}/v1/moderations`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` } });
      assert.equal(res.status, 404);
      assertOpenAiError(await res.json(), 'not_found');
    });

    test('provider 429 keeps Retry-After (RateLimitError); 500 becomes 502; Anthropic 529 becomes 503', async () => {
      gw.fake.setBehaviour({ fault: '429', retryAfterS: 7 }, { requests: 1 });
      const limited = await raw(gw, t.apiKey, hello);
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), '7');
      gw.fake.setBehaviour({ fault: '429' }, { requests: 1 });
      await assert.rejects(create(t.openai), OpenAI.RateLimitError);
      gw.fake.setBehaviour({ fault: '500' }, { requests: 1 });
      const failed = await raw(gw, t.apiKey, hello);
      assert.equal(failed.status, 502);
      assertOpenAiError(failed.body, 'upstream_error');
      gw.fake.setBehaviour({ fault: '529' }, { requests: 1 });
      await assert.rejects(create(t.openai, 'anthropic/claude-haiku-4-5'), (err: unknown) => err instanceof OpenAI.APIError && err.status === 503);
    });

    test('a provider refusing the stored key: 401 that says it is the provider key', async () => {
      gw.fake.setBehaviour({ fault: '401' }, { requests: 1 });
      const r = await raw(gw, t.apiKey, hello);
      assert.equal(r.status, 401);
      assertOpenAiError(r.body, 'upstream_authentication_failed');
      assert.match(r.body.error.message, /key stored for this tenant/);
    });

    test('an upstream that never answers: 504 upstream_timeout after the first-byte timeout', async () => {
      gw.fake.setBehaviour({ fault: 'hang' }, { requests: 1 });
      const r = await raw(gw, t.apiKey, hello);
      assert.equal(r.status, 504);
      assertOpenAiError(r.body, 'upstream_timeout');
    });

    test('garbage from upstream: 502 upstream_invalid_response, never a 500 of ours', async () => {
      gw.fake.setBehaviour({ fault: 'garbage' }, { requests: 1 });
      const r = await raw(gw, t.apiKey, hello);
      assert.equal(r.status, 502);
      assertOpenAiError(r.body, 'upstream_invalid_response');
    });

    for (const fault of ['drop', 'stream-error', 'garbage'] as const) {
      for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5']) {
        test(`a stream that fails midway (${fault}, ${model.split('/')[0]}) reaches the SDK as an error, never a clean finish`, async () => {
          // Chunks apart in time, so the first ones reach the client before the fault (a fault already read
          // with the first bytes fails the call before its stream opens: an HTTP error, retried or fallen back).
          gw.fake.setBehaviour({ fault, faultAfterChunks: 2, chunkDelayMs: 5 }, { requests: 1 });
          const stream = await t.openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'a b c d e f' }], stream: true });
          let text = '';
          await assert.rejects(async () => {
            for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
          }, OpenAI.APIError);
          assert.ok(text.length > 0, 'the chunks before the failure arrived');
        });
      }
    }

    test('a stream whose provider fails before its first byte reached the client: an HTTP error, not an opened stream', async () => {
      gw.fake.setBehaviour({ fault: 'stream-error', faultAfterChunks: 0 }, { requests: 1 });
      const res = await raw(gw, t.apiKey, JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a b' }], stream: true }));
      assert.equal(res.status, 502);
      assert.match(String(res.headers.get('content-type')), /json/);
      assert.equal(res.body.error.type, 'api_error');
    });

    test('a stream whose upstream goes silent: ended with an upstream_timeout error event', async () => {
      gw.fake.setBehaviour({ chunkDelayMs: 1000 }, { requests: 1 });
      const stream = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a b' }], stream: true });
      await assert.rejects(
        async () => {
          for await (const _ of stream);
        },
        (err: unknown) => err instanceof OpenAI.APIError && /did not answer in time/.test(err.message),
      );
    });

    test('no provider key and no gateway key appear in any log line', async () => {
      const text = gw.logs.join('');
      assert.ok(text.length > 0, 'the service logged something');
      assert.doesNotMatch(text, /secret-key-/);
      assert.doesNotMatch(text, /sk-gw-[A-Za-z0-9_-]{20}/);
      assert.doesNotMatch(text, /gws_[A-Za-z0-9_-]{20}/);
    });
  });
}
