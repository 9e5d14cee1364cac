import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { createAuthService } from '../../src/auth/service.ts';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import type { ConfigError } from '../../src/platform/config.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { type LiveGateway, startLiveGateway } from '../helpers/gateway-service.ts';

/**
 * GET /metrics shows the whole service's figures (the gateway's cost totals
 * and circuit states): {P}_METRICS_TOKEN puts it behind a bearer token,
 * {P}_METRICS_PORT moves it to a port of its own, and in production, with
 * neither, it is not served at all. The same platform code serves both
 * services.
 */
const TOKEN = 'metrics-token-0123456789-abcdefghijklmnop';
const PRODUCTION = { NODE_ENV: 'production', GATEWAY_BASE_URL: 'https://gw.example', SMTP_HOST: 'smtp.example' };

async function scrape(base: string, token?: string) {
  const res = await fetch(`${base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('the gateway’s /metrics', () => {
  const started: LiveGateway[] = [];
  const gateway = async (env: Record<string, string>) => {
    const gw = await startLiveGateway('sqlite', env);
    started.push(gw);
    return gw;
  };
  after(async () => {
    for (const gw of started) await gw.close();
  });

  test('in development with neither setting: public on the service port, as before', async () => {
    const gw = await gateway({});
    const r = await scrape(gw.url);
    assert.equal(r.status, 200);
    assert.match(r.text, /gateway_http_requests_total/);
    assert.ok(gw.logs.some((l) => l.includes("metrics: /metrics is served on the service's port, to anyone")));
  });

  test('in production with neither setting: not served, and the start-up line says how to turn it on', async () => {
    const gw = await gateway(PRODUCTION);
    const r = await scrape(gw.url);
    assert.equal(r.status, 404);
    assert.doesNotMatch(r.text, /gateway_/);
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200, 'health stays open');
    assert.ok(gw.logs.some((l) => l.includes('metrics: /metrics is not served: set GATEWAY_METRICS_TOKEN')), 'the start-up line');
  });

  test('with GATEWAY_METRICS_TOKEN: 401 without the token or with another, 200 with it', async () => {
    const gw = await gateway({ ...PRODUCTION, GATEWAY_METRICS_TOKEN: TOKEN });
    const none = await scrape(gw.url);
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.text).code, 'invalid_metrics_token');
    assert.equal(none.headers.get('www-authenticate'), 'Bearer');
    assert.doesNotMatch(none.text, /gateway_http/);
    assert.equal((await scrape(gw.url, `${TOKEN}x`)).status, 401);
    assert.equal((await scrape(gw.url, TOKEN.slice(0, -1))).status, 401);
    const ok = await scrape(gw.url, TOKEN);
    assert.equal(ok.status, 200);
    assert.match(ok.text, /gateway_http_requests_total/);
  });

  test('with GATEWAY_METRICS_PORT: the service port answers 404, the metrics port serves it (and nothing else)', async () => {
    const gw = await gateway({ GATEWAY_METRICS_PORT: '0' });
    assert.equal((await scrape(gw.url)).status, 404);
    const metricsUrl = gw.service.runtime.metricsUrl();
    assert.ok(metricsUrl && metricsUrl !== gw.url);
    const r = await scrape(metricsUrl);
    assert.equal(r.status, 200);
    assert.match(r.text, /gateway_http_requests_total/);
    assert.equal((await fetch(`${metricsUrl}/v1/models`)).status, 404);
    assert.equal((await fetch(`${metricsUrl}/api/v1/tenant`)).status, 404);
  });

  test('with both: the metrics port asks for the token too', async () => {
    const gw = await gateway({ ...PRODUCTION, GATEWAY_METRICS_PORT: '0', GATEWAY_METRICS_TOKEN: TOKEN });
    const metricsUrl = gw.service.runtime.metricsUrl()!;
    assert.equal((await scrape(gw.url, TOKEN)).status, 404);
    assert.equal((await scrape(metricsUrl)).status, 401);
    assert.equal((await scrape(metricsUrl, TOKEN)).status, 200);
  });

  test('a token shorter than 32 characters is refused at start', () => {
    assert.throws(
      () => loadGatewayConfig({ GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64), DATA_DIR: '/tmp/metrics-config', GATEWAY_METRICS_TOKEN: 'short' }),
      (err: ConfigError) => err.problems.includes('GATEWAY_METRICS_TOKEN must be at least 32 characters'),
    );
  });
});

describe('the account service’s /metrics (the same platform code)', () => {
  const databases: TestDatabase[] = [];
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers) await close();
    for (const db of databases) await db.drop();
  });

  async function accountService(env: Record<string, string>) {
    const db = await freshDatabase('sqlite');
    databases.push(db);
    const config = loadAuthConfig({
      NODE_ENV: 'production',
      DATA_DIR: db.dataDir,
      AUTH_BASE_URL: 'https://accounts.example',
      AUTH_API_KEY: 'test-api-key-0123456789-abcdefghijklmnop',
      AUTH_ENCRYPTION_KEY: 'c'.repeat(64),
      SMTP_HOST: 'smtp.example',
      ...env,
    });
    const service = await createAuthService(config, { processMetrics: false, logger: pino({ level: 'silent' }) });
    closers.push(() => service.close());
    const url = await service.runtime.listen('127.0.0.1', 0);
    return { url, metricsUrl: service.runtime.metricsUrl() };
  }

  test('production with neither setting: 404, even with the API key', async () => {
    const { url } = await accountService({});
    assert.equal((await scrape(url)).status, 404);
    const withKey = await fetch(`${url}/metrics`, { headers: { 'x-api-key': 'test-api-key-0123456789-abcdefghijklmnop' } });
    assert.equal(withKey.status, 404);
  });

  test('AUTH_METRICS_TOKEN: 401 without it, 200 with it', async () => {
    const { url } = await accountService({ AUTH_METRICS_TOKEN: TOKEN });
    assert.equal((await scrape(url)).status, 401);
    const ok = await scrape(url, TOKEN);
    assert.equal(ok.status, 200);
    assert.match(ok.text, /auth_http_requests_total/);
  });

  test('AUTH_METRICS_PORT: served there only', async () => {
    const { url, metricsUrl } = await accountService({ AUTH_METRICS_PORT: '0' });
    assert.equal((await scrape(url)).status, 404);
    assert.equal((await scrape(metricsUrl!)).status, 200);
  });
});
