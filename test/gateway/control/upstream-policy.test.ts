import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import { putProviderKey } from '../../../src/gateway/control-plane/provider-keys.ts';
import { privateUpstreamsWarning, upstreamPolicy } from '../../../src/gateway/control-plane/upstream-policy.ts';
import { dnsResolverLookup } from '../../../src/platform/safe-fetch.ts';
import { startDnsServer } from '../../helpers/dns-server.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

describe('GATEWAY_ALLOW_PRIVATE_UPSTREAMS as a connector policy', () => {
  const config = (value: string | undefined, production = false) =>
    loadGatewayConfig({
      GATEWAY_ALLOW_PRIVATE_UPSTREAMS: value,
      GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64),
      DATA_DIR: '/tmp/gateway-policy-test',
      ...(production ? { NODE_ENV: 'production', GATEWAY_BASE_URL: 'https://gw.example', SMTP_HOST: 'smtp.example' } : {}),
    });

  test('unset, true, and a list of hosts and ranges', () => {
    assert.deepEqual(upstreamPolicy(config(undefined).allowPrivateUpstreams), { allowAll: false, hosts: [], cidrs: [] });
    assert.deepEqual(upstreamPolicy(config('true').allowPrivateUpstreams), { allowAll: true, hosts: [], cidrs: [] });
    assert.deepEqual(upstreamPolicy(config('Ollama.local, 10.0.0.0/8 fd00::1').allowPrivateUpstreams), {
      allowAll: false,
      hosts: ['ollama.local'],
      cidrs: ['10.0.0.0/8', 'fd00::1/128'],
    });
  });

  test('a warning at start only for true in production', () => {
    assert.match(privateUpstreamsWarning(config('true', true)) ?? '', /unsafe unless every tenant is trusted/);
    assert.equal(privateUpstreamsWarning(config('true')), undefined);
    assert.equal(privateUpstreamsWarning(config('10.0.0.0/8', true)), undefined);
    assert.equal(privateUpstreamsWarning(config(undefined, true)), undefined);
  });
});

for (const kind of DB_KINDS) {
  describe(`a provider base_url by name (${kind})`, () => {
    let gw: TestGateway;
    let dns: Awaited<ReturnType<typeof startDnsServer>>;
    before(async () => {
      gw = await startTestGateway(kind);
      dns = await startDnsServer({ 'llm.public.test': { a: ['93.184.215.14'] }, 'llm.private.test': { a: ['93.184.215.14', '172.16.0.9'] } });
    });
    after(async () => {
      await dns.close();
      await gw.close();
    });

    test('resolved when stored: a name with any private address is refused, a public one stored', async () => {
      const { tenantId } = await gw.signup();
      const lookup = dnsResolverLookup({ servers: [dns.server] });
      const stored = await putProviderKey(gw.deps, tenantId, { provider: 'openai-compatible', key: 'key-12345678', baseUrl: 'https://llm.public.test/v1' }, lookup);
      assert.equal(stored.base_url, 'https://llm.public.test/v1');
      const refusal = (baseUrl: string) =>
        putProviderKey(gw.deps, tenantId, { provider: 'openai-compatible', key: 'key-12345678', baseUrl }, lookup).then(
          () => assert.fail(`${baseUrl} was stored`),
          (err: { code?: string; message?: string; errors?: { field: string }[] }) => ({ code: err.code, message: err.message, field: err.errors?.[0]?.field }),
        );
      const privateName = await refusal('https://llm.private.test/v1');
      assert.deepEqual(privateName, { code: 'base_url_not_allowed', message: privateName.message, field: 'base_url' });
      // A name the name server does not know: the same answer, or the refusal would tell which internal names exist.
      assert.deepEqual(await refusal('https://nowhere.test/v1'), privateName);
    });
  });
}
