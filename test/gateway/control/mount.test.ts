import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { registerControlPlane } from '../../../src/gateway/app.ts';
import { createHttpApp, type App } from '../../../src/platform/http.ts';
import { startTestGateway, type TestGateway, uniqueEmail } from '../../helpers/gateway.ts';

/**
 * The control plane mounted in an app made for the data plane, with its
 * large body limit: the control plane's own routes keep their limit and
 * problem+json, the data plane's keep theirs.
 */
describe('registerControlPlane inside a data-plane app', () => {
  let gw: TestGateway;
  let app: App;
  before(async () => {
    gw = await startTestGateway('sqlite');
    app = await createHttpApp({ logger: gw.deps.log, metrics: gw.deps.metrics, bodyLimit: 32 * 1024 * 1024, trustProxy: false, title: 't', version: '0' });
    await registerControlPlane(app, gw.deps);
    await app.register(async (dataPlane) => {
      dataPlane.setErrorHandler((error, _request, reply) => reply.status(400).send({ error: { message: (error as Error).message, type: 'invalid_request_error' } }));
      dataPlane.post('/v1/echo', async (request) => ({ size: JSON.stringify(request.body).length }));
    });
  });
  after(async () => {
    await app.close();
    await gw.close();
  });

  test('control-plane errors stay problem+json and its bodies stay within 64 KiB; the data plane keeps its own', async () => {
    const big = { name: 'x'.repeat(70 * 1024), email: uniqueEmail() };
    const r = await app.inject({ method: 'POST', url: '/api/v1/signup', payload: big });
    assert.equal(r.statusCode, 413);
    assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(r.json().code, 'body_too_large');
    const invalid = await app.inject({ method: 'POST', url: '/api/v1/signup', payload: { name: 'A' } });
    assert.equal(invalid.json().code, 'validation_failed');
    const echo = await app.inject({ method: 'POST', url: '/v1/echo', payload: big });
    assert.equal(echo.statusCode, 200);
    const ok = await app.inject({ method: 'POST', url: '/api/v1/signup', payload: { name: 'A', email: uniqueEmail() } });
    assert.equal(ok.statusCode, 201);
  });
});
