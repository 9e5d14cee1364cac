import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';

/** A chat request with an extra field nested `levels` deep: the body itself is one level more. */
const withExtra = (levels: number, content = 'hi') =>
  JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }] }).replace(/}$/, `,"x":${'['.repeat(levels)}${']'.repeat(levels)}}`);

/**
 * Nothing per request recurses on a client's nesting (issue 31, the first
 * half of defect 6): a body nested more than 128 levels deep is refused,
 * before it is parsed, with 400 body_too_deep in its surface's shape. A
 * 5,000-level array in an extra field was a 500 internal_error (the cache
 * key's recursion), and with X-Gateway-No-Cache a 502 upstream_unreachable
 * counted against the provider's breaker, which every tenant shares.
 */
describe('request bodies nested too deep', () => {
  let gw: LiveGateway;
  let tenant: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite', { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_RETRIES: '0' });
    tenant = await gw.tenant({ providers: ['openai'] });
  });
  after(() => gw.close());

  const post = async (path: string, body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.apiKey}`, ...headers },
      body,
    });
    return { status: res.status, type: res.headers.get('content-type'), body: JSON.parse(await res.text()) };
  };

  test('data plane: 400 body_too_deep in the OpenAI shape, the cache on or bypassed; the provider is never called', async () => {
    const calls = gw.fake.calls.count;
    for (const headers of [{}, { 'x-gateway-no-cache': 'true' }] as Record<string, string>[]) {
      const r = await post('/v1/chat/completions', withExtra(5000), headers);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.deepEqual(Object.keys(r.body.error).sort(), ['code', 'message', 'param', 'type']);
      assert.equal(r.body.error.code, 'body_too_deep');
      assert.equal(r.body.error.type, 'invalid_request_error');
      assert.match(r.body.error.message, /more than 128 levels deep/);
    }
    assert.equal(gw.fake.calls.count, calls);
    assert.equal((await post('/v1/chat/completions', withExtra(5000), { 'x-gateway-no-cache': 'true' })).status, 400);
    assert.equal((await post('/v1/chat/completions', withExtra(1), { 'x-gateway-no-cache': 'true' })).status, 200, 'no breaker opened');
  });

  test('128 levels in all are taken, cached and replayed; 129 are refused; brackets inside strings do not count', async () => {
    const first = await post('/v1/chat/completions', withExtra(127));
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal((await post('/v1/chat/completions', withExtra(128))).body.error.code, 'body_too_deep');
    assert.equal((await post('/v1/chat/completions', withExtra(1, '['.repeat(10_000)))).status, 200);
  });

  test('control plane: the same refusal as problem+json', async () => {
    const r = await post('/api/v1/signup', JSON.stringify({ name: 'Deep', email: 'deep@example.com', x: JSON.parse(`${'['.repeat(200)}${']'.repeat(200)}`) }));
    assert.equal(r.status, 400);
    assert.match(r.type!, /^application\/problem\+json/);
    assert.equal(r.body.code, 'body_too_deep');
  });
});
