import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';

// Input handling happens before storage, so SQLite alone covers it.
describe('bad input gets a clear 4xx problem, never a 500', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startTestAuth('sqlite', { AUTH_LIMIT_REGISTER: '1000/3600', AUTH_LIMIT_LOGIN: '1000/300' });
  });
  after(() => auth.close());

  const post = (path: string, options: Parameters<TestAuth['request']>[2]) => auth.request('POST', path, options);

  function assertProblem(r: Awaited<ReturnType<TestAuth['request']>>, status: number, code: string) {
    assert.equal(r.status, status, r.text);
    assert.equal(r.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    assert.equal(r.body.code, code);
    assert.equal(r.body.status, status);
    assert.equal(typeof r.body.detail, 'string');
    assert.ok(r.body.detail.length > 10);
    assert.ok(!/at .*\.ts:\d+/.test(r.text), 'no stack trace');
  }

  test('malformed JSON is 400 malformed_json', async () => {
    for (const rawBody of ['{"email":', '{email: "a"}', 'null x', '']) {
      const r = await post('/v1/register', { rawBody, headers: { 'content-type': 'application/json' } });
      assertProblem(r, 400, 'malformed_json');
    }
  });

  test('a body that is not an object is a validation error', async () => {
    for (const rawBody of ['[]', '"text"', '42', 'null']) {
      const r = await post('/v1/login', { rawBody, headers: { 'content-type': 'application/json' } });
      assertProblem(r, 400, 'validation_failed');
    }
  });

  test('missing fields are named', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['/v1/register', { password: PASSWORD, ip: '192.0.2.1' }, 'email'],
      ['/v1/register', { email: uniqueEmail(), ip: '192.0.2.1' }, 'password'],
      ['/v1/register', { email: uniqueEmail(), password: PASSWORD }, 'ip'],
      ['/v1/login', { email: 'a@example.com', ip: '192.0.2.1' }, 'password'],
      ['/v1/verify', {}, 'token'],
      ['/v1/resend-verification', { ip: '192.0.2.1' }, 'email'],
    ];
    for (const [path, body, field] of cases) {
      const r = await post(path, { body });
      assertProblem(r, 400, 'validation_failed');
      assert.equal(r.body.errors[0].field, field);
      assert.match(r.body.detail, new RegExp(field));
    }
  });

  test('wrong types are refused, not coerced', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ email: 123, password: PASSWORD, ip: '192.0.2.1' }, 'email'],
      [{ email: uniqueEmail(), password: 123456789012345, ip: '192.0.2.1' }, 'password'],
      [{ email: uniqueEmail(), password: [PASSWORD], ip: '192.0.2.1' }, 'password'],
      [{ email: uniqueEmail(), password: PASSWORD, ip: null }, 'ip'],
      [{ email: { $ne: 1 }, password: PASSWORD, ip: '192.0.2.1' }, 'email'],
    ];
    for (const [body, field] of cases) {
      const r = await post('/v1/register', { body });
      assertProblem(r, 400, 'validation_failed');
      assert.equal(r.body.errors[0].field, field);
    }
    const verify = await post('/v1/verify', { body: { token: true } });
    assertProblem(verify, 400, 'validation_failed');
  });

  test('an oversized body is 413 body_too_large', async () => {
    const r = await post('/v1/register', { body: { email: uniqueEmail(), password: 'x'.repeat(200_000), ip: '192.0.2.1' } });
    assertProblem(r, 413, 'body_too_large');
  });

  test('over-long fields are refused before any work', async () => {
    const r = await post('/v1/login', { body: { email: uniqueEmail(), password: 'x'.repeat(5000), ip: '192.0.2.1' } });
    assertProblem(r, 400, 'validation_failed');
    assert.equal(r.body.errors[0].field, 'password');
  });

  test('a body that is not JSON is 415 unsupported_media_type', async () => {
    const r = await post('/v1/register', { rawBody: 'email=a', headers: { 'content-type': 'text/plain' } });
    assertProblem(r, 415, 'unsupported_media_type');
  });

  test('unicode edge cases in emails are refused: lone surrogates, zero-width and direction marks', async () => {
    const lone = await post('/v1/register', { body: { email: '\ud800@example.com', password: PASSWORD, ip: '192.0.2.1' } });
    assertProblem(lone, 400, 'invalid_email');
    const zeroWidth = await post('/v1/register', { body: { email: 'a\u200b@example.com', password: PASSWORD, ip: '192.0.2.1' } });
    assertProblem(zeroWidth, 400, 'invalid_email');
    const rtl = await post('/v1/register', { body: { email: 'a\u202e@example.com', password: PASSWORD, ip: '192.0.2.1' } });
    assertProblem(rtl, 400, 'invalid_email');
  });

  test('unicode passwords (emoji, combining marks, RTL) work end to end', async () => {
    const email = uniqueEmail();
    const password = '🔐 pässwörd שלום 密码';
    assert.equal((await post('/v1/register', { body: { email, password, ip: '192.0.2.1' } })).status, 201);
    const db = auth.service.deps.db;
    await db.updateTable('users').set({ email_verified_at: 1 }).where('email', '=', email).execute();
    // The same password typed in decomposed form (NFD) matches.
    const r = await post('/v1/login', { body: { email, password: password.normalize('NFD'), ip: '192.0.2.1' } });
    assert.equal(r.status, 200);
  });

  test('unknown routes and methods are 404 problems', async () => {
    assertProblem(await auth.request('GET', '/v1/nothing'), 404, 'not_found');
    assertProblem(await auth.request('DELETE', '/v1/me'), 404, 'not_found');
  });

  test('every reply carries a request id; an incoming X-Request-Id is kept', async () => {
    const r = await auth.request('GET', '/v1/me', { headers: { 'x-request-id': 'trace-abc-123' } });
    assert.equal(r.headers.get('x-request-id'), 'trace-abc-123');
    assert.equal(r.body.request_id, 'trace-abc-123');
  });
});
