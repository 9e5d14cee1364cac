import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { App, ErrorFormat } from '../../src/platform/http.ts';
import { buildFixtureApp, DomainError } from '../helpers/platform-app.ts';

type Reply = { status: number; headers: Record<string, unknown>; body: unknown };

async function call(app: App, method: 'GET' | 'POST', url: string, payload?: string, contentType = 'application/json'): Promise<Reply> {
  const res = await app.inject({ method, url, payload, headers: payload === undefined ? {} : { 'content-type': contentType } });
  return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : undefined };
}

/** The framework errors and our own, as each format sends them. */
const CASES = {
  validation: ['POST', '/things', '{"name": 5}'],
  missingField: ['POST', '/things', '{}'],
  malformedJson: ['POST', '/things', '{"name":'],
  tooLarge: ['POST', '/things', JSON.stringify({ name: 'x'.repeat(2000) })],
  wrongMediaType: ['POST', '/things', 'name=x', 'text/plain'],
  ourProblem: ['GET', '/conflict'],
  domainError: ['GET', '/domain'],
  crash: ['GET', '/crash'],
  notFound: ['GET', '/nowhere?q=1'],
} as const;

function send(app: App, name: keyof typeof CASES): Promise<Reply> {
  const [method, url, payload, type] = CASES[name] as readonly [string, string, string?, string?];
  return call(app, method as 'GET' | 'POST', url, payload, type);
}

function withApp(format: ErrorFormat, fn: (app: () => App) => void): void {
  let app: App;
  before(async () => {
    app = await buildFixtureApp({ errorFormat: format });
  });
  after(() => app.close());
  fn(() => app);
}

describe("createHttpApp({ errorFormat: 'problem' }): RFC 9457 problem+json", () => {
  withApp('problem', (app) => {
    /** The whole body, request_id checked against the response header and left out. */
    async function problem(name: keyof typeof CASES) {
      const r = await send(app(), name);
      assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
      const { request_id, ...body } = r.body as { request_id: string; errors?: unknown };
      assert.equal(request_id, r.headers['x-request-id']);
      return { status: r.status, body };
    }

    test('validation errors name the field', async () => {
      assert.deepEqual(await problem('validation'), {
        status: 400,
        body: {
          type: 'about:blank',
          title: 'Bad Request',
          status: 400,
          code: 'validation_failed',
          detail: 'body field "name" must be string.',
          errors: [{ field: 'name', message: 'must be string' }],
        },
      });
      const missing = await problem('missingField');
      assert.deepEqual(missing.body.errors, [{ field: 'name', message: 'is required' }]);
    });

    test('framework errors: malformed JSON 400, body over the limit 413, another content type 415', async () => {
      assert.deepEqual(await problem('malformedJson'), {
        status: 400,
        body: { type: 'about:blank', title: 'Bad Request', status: 400, code: 'malformed_json', detail: 'The request body is not valid JSON.' },
      });
      assert.deepEqual(await problem('tooLarge'), {
        status: 413,
        body: { type: 'about:blank', title: 'Payload Too Large', status: 413, code: 'body_too_large', detail: 'The request body is larger than allowed.' },
      });
      assert.deepEqual(await problem('wrongMediaType'), {
        status: 415,
        body: {
          type: 'about:blank',
          title: 'Unsupported Media Type',
          status: 415,
          code: 'unsupported_media_type',
          detail: 'The Content-Type of the request is not supported; send application/json.',
        },
      });
    });

    test('our own problem keeps its code and headers; a crash is a 500 that tells nothing', async () => {
      const r = await send(app(), 'ourProblem');
      assert.equal(r.headers['retry-after'], '7');
      assert.deepEqual(await problem('ourProblem'), {
        status: 409,
        body: { type: 'about:blank', title: 'Conflict', status: 409, code: 'thing_taken', detail: 'That name is taken.' },
      });
      assert.deepEqual(await problem('crash'), {
        status: 500,
        body: {
          type: 'about:blank',
          title: 'Internal Server Error',
          status: 500,
          code: 'internal_error',
          detail: 'An internal error occurred; it has been logged.',
        },
      });
    });

    test('a route declaring another content type names it in its 415', async () => {
      const r = await call(app(), 'POST', '/form', 'x', 'text/plain');
      assert.equal(r.status, 415);
      assert.equal((r.body as { detail: string }).detail, 'The Content-Type of the request is not supported; send application/x-www-form-urlencoded.');
    });

    test('404 names the method and path, not the query', async () => {
      assert.deepEqual(await problem('notFound'), {
        status: 404,
        body: { type: 'about:blank', title: 'Not Found', status: 404, code: 'not_found', detail: 'No route for GET /nowhere.' },
      });
    });
  });
});

describe("createHttpApp({ errorFormat: 'oauth' }): RFC 6749 section 5.2", () => {
  withApp('oauth', (app) => {
    async function oauth(name: keyof typeof CASES) {
      const r = await send(app(), name);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      assert.equal(r.headers['cache-control'], 'no-store', 'RFC 6749 section 5.1');
      return { status: r.status, body: r.body };
    }

    test('the domain error class (mapError) is sent with its own error code and headers', async () => {
      const r = await send(app(), 'domainError');
      assert.equal(r.headers['www-authenticate'], 'Bearer error="invalid_token"');
      assert.deepEqual(await oauth('domainError'), {
        status: 401,
        body: { error: 'invalid_token', error_description: "The token is 'gone'." },
      });
    });

    test('framework errors, validation and 404 are invalid_request with a description', async () => {
      assert.deepEqual(await oauth('validation'), { status: 400, body: { error: 'invalid_request', error_description: "body field 'name' must be string." } });
      assert.deepEqual(await oauth('malformedJson'), { status: 400, body: { error: 'invalid_request', error_description: 'The request body is not valid JSON.' } });
      assert.deepEqual(await oauth('tooLarge'), { status: 413, body: { error: 'invalid_request', error_description: 'The request body is larger than allowed.' } });
      assert.deepEqual(await oauth('wrongMediaType'), {
        status: 415,
        body: { error: 'invalid_request', error_description: 'The Content-Type of the request is not supported; send application/json.' },
      });
      assert.deepEqual(await oauth('notFound'), { status: 404, body: { error: 'invalid_request', error_description: 'No route for GET /nowhere.' } });
    });

    test('our own problems (an API-key gate) and server errors keep problem+json', async () => {
      for (const [name, status, code] of [
        ['ourProblem', 409, 'thing_taken'],
        ['crash', 500, 'internal_error'],
      ] as const) {
        const r = await send(app(), name);
        assert.equal(r.status, status);
        assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
        assert.equal((r.body as { code: string }).code, code);
      }
    });
  });
});

describe("createHttpApp({ errorFormat: 'openai' }): OpenAI's error object", () => {
  withApp('openai', (app) => {
    async function openai(name: keyof typeof CASES) {
      const r = await send(app(), name);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      return { status: r.status, body: r.body };
    }
    const error = (message: string, type: string, code: string, param: string | null = null) => ({ error: { message, type, code, param } });

    test('validation errors name the field in param', async () => {
      assert.deepEqual(await openai('validation'), {
        status: 400,
        body: error('body field "name" must be string.', 'invalid_request_error', 'validation_failed', 'name'),
      });
      assert.deepEqual((await openai('missingField')).body, error('body field "name" is required.', 'invalid_request_error', 'validation_failed', 'name'));
    });

    test('framework errors: 400, 413 over the body limit, 415', async () => {
      assert.deepEqual(await openai('malformedJson'), { status: 400, body: error('The request body is not valid JSON.', 'invalid_request_error', 'malformed_json') });
      assert.deepEqual(await openai('tooLarge'), { status: 413, body: error('The request body is larger than allowed.', 'invalid_request_error', 'body_too_large') });
      assert.deepEqual(await openai('wrongMediaType'), {
        status: 415,
        body: error('The Content-Type of the request is not supported; send application/json.', 'invalid_request_error', 'unsupported_media_type'),
      });
    });

    test("a problem's own type and param win; without them the type follows the status, as OpenAI's API sends it", async () => {
      const r = await send(app(), 'ourProblem');
      assert.equal(r.headers['retry-after'], '7');
      assert.deepEqual(r.body, error('That name is taken.', 'invalid_request_error', 'thing_taken', 'name'));
      assert.deepEqual((await call(app(), 'GET', '/typed')).body, error('Slow down.', 'tokens', 'rate_limit_exceeded'));
      assert.deepEqual(await openai('crash'), { status: 500, body: error('An internal error occurred; it has been logged.', 'server_error', 'internal_error') });
      assert.deepEqual(await openai('domainError'), { status: 401, body: error("The token is 'gone'.", 'invalid_request_error', 'invalid_token') });
    });

    test('404', async () => {
      assert.deepEqual(await openai('notFound'), { status: 404, body: error('No route for GET /nowhere.', 'invalid_request_error', 'not_found') });
    });
  });
});

describe('useErrorFormat: a scope picks its own format', () => {
  withApp('problem', (app) => {
    test('the /v1 scope answers in the OpenAI shape, its 404s included; the rest of the app keeps problem+json', async () => {
      const scoped = await call(app(), 'POST', '/v1/things', '{"name":');
      assert.equal(scoped.status, 400);
      assert.deepEqual(scoped.body, { error: { message: 'The request body is not valid JSON.', type: 'invalid_request_error', code: 'malformed_json', param: null } });
      const missing = await call(app(), 'GET', '/v1/nowhere');
      assert.equal(missing.status, 404);
      assert.deepEqual(missing.body, { error: { message: 'No route for GET /v1/nowhere.', type: 'invalid_request_error', code: 'not_found', param: null } });
      const outside = await call(app(), 'GET', '/nowhere');
      assert.equal((outside.body as { code: string }).code, 'not_found');
      assert.match(String((await send(app(), 'malformedJson')).headers['content-type']), /^application\/problem\+json/);
    });

    test('an error class the scope maps keeps its code', async () => {
      const r = await call(app(), 'GET', '/v1/domain');
      assert.deepEqual(r.body, { error: { message: "The token is 'gone'.", type: 'invalid_request_error', code: 'invalid_token', param: null } });
    });
  });
});

test('DomainError is the fixture the formats map', () => {
  assert.equal(new DomainError('x').code, 'invalid_token');
});
