import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Pool } from 'undici';
import { type CollectOptions, collectResponse } from '../../../src/gateway/data-plane/collect-response.ts';

/** A real HTTP server whose answer each test chooses by path; `closed` counts answers whose connection went away before they ended, `received` the requests. */
describe('collectResponse: a whole upstream answer read through undici dispatch', () => {
  let pool: Pool;
  let closed = 0;
  let received = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    received++;
    req.resume();
    res.on('close', () => {
      if (!res.writableFinished) closed++;
    });
    switch (req.url) {
      case '/ok':
        res.writeHead(200, { 'content-type': 'application/json', 'x-echo': req.headers['x-echo'] ?? '' });
        res.write('{"a":');
        setTimeout(() => res.end('1}'), 5);
        return;
      case '/big':
        res.writeHead(200);
        res.end('x'.repeat(10_000));
        return;
      case '/error-big':
        res.writeHead(429, { 'retry-after': '7' });
        res.end('e'.repeat(10_000));
        return;
      case '/error-cut':
        res.writeHead(500, { 'content-length': '100' });
        res.write('partial');
        setTimeout(() => res.socket?.destroy(), 5);
        return;
      case '/silent':
        return; // never answers
      case '/slow-body':
        res.writeHead(200);
        res.write('{');
        return; // the body never ends
    }
  });
  const options = (path: string, extra: Partial<CollectOptions> = {}): CollectOptions => ({
    path,
    headers: { 'content-type': 'application/json', 'x-echo': 'hi' },
    body: '{}',
    signal: new AbortController().signal,
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
    maxBytes: 1_000,
    errorBytes: 100,
    tooLarge: () => new Error('too large'),
    ...extra,
  });

  before(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  after(async () => {
    await pool.close();
    server.closeAllConnections();
    server.close();
  });

  test('a 2xx answer arrives whole, in chunks, with its status and headers', async () => {
    const answer = await collectResponse(pool, options('/ok'));
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.headers['x-echo'], 'hi');
    assert.equal(answer.body.toString(), '{"a":1}');
  });

  test('a 2xx answer past maxBytes fails with the caller error, and the pool goes on working', async () => {
    await assert.rejects(collectResponse(pool, options('/big')), /too large/);
    assert.equal((await collectResponse(pool, options('/ok'))).statusCode, 200);
  });

  test('an error answer is read only up to errorBytes, with its headers', async () => {
    const answer = await collectResponse(pool, options('/error-big'));
    assert.equal(answer.statusCode, 429);
    assert.equal(answer.headers['retry-after'], '7');
    assert.equal(answer.body.toString(), 'e'.repeat(100));
  });

  test('an error answer cut short by the connection resolves with what was read', async () => {
    const answer = await collectResponse(pool, options('/error-cut'));
    assert.equal(answer.statusCode, 500);
    assert.equal(answer.body.toString(), 'partial');
  });

  test('the signal aborts a call waiting for its answer, with its reason, and closes the connection', async () => {
    const controller = new AbortController();
    const before = closed;
    const pending = collectResponse(pool, options('/silent', { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('client gone')), 20);
    await assert.rejects(pending, /client gone/);
    await waitFor(() => closed > before);
  });

  test('the signal aborts a body being read', async () => {
    const controller = new AbortController();
    const pending = collectResponse(pool, options('/slow-body', { signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('client gone')), 20);
    await assert.rejects(pending, /client gone/);
  });

  test('an already aborted signal rejects at once, and nothing is sent', async () => {
    const controller = new AbortController();
    controller.abort(new Error('already gone'));
    const before = received;
    await assert.rejects(collectResponse(pool, options('/ok', { signal: controller.signal })), /already gone/);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(received, before);
  });

  test('no answer within headersTimeout fails with undici timeout code', async () => {
    await assert.rejects(collectResponse(pool, options('/silent', { headersTimeout: 50 })), { code: 'UND_ERR_HEADERS_TIMEOUT' });
  });

  test('a body silent for longer than bodyTimeout fails with undici timeout code', async () => {
    await assert.rejects(collectResponse(pool, options('/slow-body', { bodyTimeout: 50 })), { code: 'UND_ERR_BODY_TIMEOUT' });
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(condition(), 'condition not met within 2 s');
}
