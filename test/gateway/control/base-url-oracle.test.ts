import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { checkProviderKey } from '../../../src/gateway/control-plane/provider-key-check.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { type LiveGateway, startLiveGateway } from '../../helpers/gateway-service.ts';

/**
 * A tenant must not learn which host names resolve inside the gateway's
 * network: a base_url whose host resolves to a private address and one
 * whose host does not resolve get the same answer, when the key is stored,
 * when the console tests it, and when a call goes out after the host's DNS
 * changed. (Timing may differ; the answer may not.)
 */
for (const kind of DB_KINDS) {
  describe(`base_url refusals tell nothing about internal names (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind);
    });
    after(() => gw.close());

    test('a private host and an unresolvable one: the same status, code and sentence', async () => {
      const { session } = await gw.signup();
      const put = (base_url: string) =>
        gw.request('POST', '/api/v1/tenant/provider-keys', { token: session, body: { provider: 'openai-compatible', key: 'key-12345678', base_url } });
      // `localhost` is loopback by RFC 6761 and `.invalid` never resolves: neither asks a name server.
      const refusals = await Promise.all(['https://localhost/v1', 'https://db.localhost/v1', 'https://nowhere.invalid/v1', 'https://xn--nowhere.invalid/v1'].map(put));
      for (const r of refusals) {
        assert.equal(r.status, 400);
        assert.equal(r.body.code, 'base_url_not_allowed');
        assert.deepEqual(r.body.errors.map((e: { field: string }) => e.field), ['base_url']);
      }
      const answers = new Set(refusals.map((r) => JSON.stringify({ status: r.status, code: r.body.code, detail: r.body.detail, errors: r.body.errors })));
      assert.equal(answers.size, 1, [...answers].join('\n'));
      assert.match(refusals[0]!.body.detail, /GATEWAY_ALLOW_PRIVATE_UPSTREAMS/);
    });
  });

  describe(`a stored base_url whose host changed (${kind})`, () => {
    let gw: LiveGateway;
    before(async () => {
      gw = await startLiveGateway(kind, { GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0', GATEWAY_BREAKER_FAILURES: '1000' });
    });
    after(() => gw.close());

    /** A tenant whose OpenAI key was stored at the fake, then whose base_url host came to resolve elsewhere (as a DNS change would). */
    async function tenantAt(baseUrl: string) {
      const t = await gw.tenant({ providers: ['openai'] });
      // Before the tenant's first call: the data plane has not loaded (and cached) its keys yet.
      await gw.service.deps.db.updateTable('provider_keys').set({ base_url: baseUrl }).where('tenant_id', '=', t.tenantId).execute();
      return t;
    }

    async function call(apiKey: string) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, 'x-gateway-no-route': 'true' },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      return { status: res.status, body: (await res.json()) as { error: Record<string, unknown> } };
    }

    test('a call: a private address and an unresolvable name answer alike', async () => {
      const privateHost = await tenantAt('https://10.255.255.1/v1');
      const unresolvable = await tenantAt('https://nowhere.invalid/v1');
      const [a, b] = [await call(privateHost.apiKey), await call(unresolvable.apiKey)];
      assert.equal(a.status, 502);
      assert.equal(a.body.error['code'], 'upstream_unreachable');
      assert.deepEqual({ status: a.status, error: a.body.error }, { status: b.status, error: b.body.error });
      assert.ok(gw.logs.some((line) => line.includes('forbidden_address')), 'the operator still sees why in the log');
    });

    test("the console's key test: the same answer too", async () => {
      const privateHost = await tenantAt('https://10.255.255.1/v1');
      const unresolvable = await tenantAt('https://nowhere.invalid/v1');
      const a = await checkProviderKey(gw.service.deps, privateHost.tenantId, 'openai');
      const b = await checkProviderKey(gw.service.deps, unresolvable.tenantId, 'openai');
      assert.ok(!a.ok && !b.ok);
      assert.deepEqual({ status: a.status, code: a.code, message: a.message }, { status: b.status, code: b.code, message: b.message });
      assert.equal(a.code, 'upstream_unreachable');
    });
  });
}
