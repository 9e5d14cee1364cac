import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { isCspSource, sendPage } from '../../src/platform/html.ts';

describe('the pages’ Content-Security-Policy', () => {
  let app: FastifyInstance;
  let url: string;
  before(async () => {
    app = Fastify();
    app.get('/page', async (request, reply) => {
      const sources = (request.query as { s?: string | string[] }).s ?? [];
      return sendPage(reply, 200, 'T', '<p>x</p>', { formAction: Array.isArray(sources) ? sources : [sources] });
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(() => app.close());

  test('valid sources are listed in form-action; one that could rewrite the policy is dropped (defence in depth)', async () => {
    const query = new URLSearchParams([
      ['s', 'https://app.example:8443'],
      ['s', 'http://[::1]:9000'],
      ['s', 'com.example.app:'],
      ['s', 'https://a;b.example'],
      ['s', 'https://a,b.example'],
      ['s', "'unsafe-inline'"],
      ['s', 'https://a.example script-src *'],
    ]);
    const res = await fetch(`${url}/page?${query}`);
    assert.equal(
      res.headers.get('content-security-policy'),
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https://app.example:8443 http://[::1]:9000 com.example.app:; " +
        "frame-ancestors 'none'; base-uri 'none'",
    );
  });

  test('isCspSource: scheme-sources and host-sources only', () => {
    for (const ok of ['https://app.example', 'http://127.0.0.1:7777', 'com.example.app:', 'https://xn--bcher-kva.example', 'app.example']) {
      assert.equal(isCspSource(ok), true, ok);
    }
    for (const bad of ['', 'https://a;b', 'https://a,b', "'self'", 'https://a b', 'https://a"b', 'https://*.example', 'https://app.example/path', 'https://a_b.example']) {
      assert.equal(isCspSource(bad), false, bad);
    }
  });
});
