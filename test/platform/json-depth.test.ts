import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { jsonNestsDeeperThan } from '../../src/platform/json-depth.ts';
import { buildFixtureApp } from '../helpers/platform-app.ts';

/** How deep a parsed value nests arrays and objects (a scalar: 0). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let deepest = 0;
  for (const v of Object.values(value)) deepest = Math.max(deepest, depthOf(v));
  return deepest + 1;
}

describe('JSON nesting, read before parsing', () => {
  test('the depth of any JSON text, whatever its strings hold (property)', () => {
    const tricky = fc.constantFrom('[', ']', '{', '}', '"', '\\', '\\"', '\\\\', '\\\\"', '"]', '[[[', 'é', '\u2028');
    const value = fc.jsonValue({ maxDepth: 6 }).chain((v) =>
      fc.array(tricky, { maxLength: 6 }).map((parts) => ({ v, key: parts.join('') })),
    );
    fc.assert(
      fc.property(value, fc.integer({ min: 0, max: 8 }), ({ v, key }, max) => {
        const doc = { [key]: v, text: key };
        const text = JSON.stringify(doc);
        assert.equal(jsonNestsDeeperThan(text, max), depthOf(doc) > max, text);
      }),
      { numRuns: 2000 },
    );
  });

  test('stops at the first level past the limit; brackets in strings never count', () => {
    assert.equal(jsonNestsDeeperThan(`${'['.repeat(129)}${']'.repeat(129)}`, 128), true);
    assert.equal(jsonNestsDeeperThan(`${'['.repeat(128)}${']'.repeat(128)}`, 128), false);
    assert.equal(jsonNestsDeeperThan(`{"a":"${'['.repeat(10_000)}"}`, 2), false);
    const escapes = `["\\\\", ["\\"]]"]]`;
    assert.deepEqual(JSON.parse(escapes), ['\\', ['"]]']]);
    assert.equal(jsonNestsDeeperThan(escapes, 2), false, 'an escaped backslash, then an escaped quote');
    assert.equal(jsonNestsDeeperThan(`${'['.repeat(3)}"unterminated`, 2), true);
  });
});

describe('a body nested too deep, refused in each format', () => {
  const deep = `{"name":${'['.repeat(129)}${']'.repeat(129)}}`;
  const send = async (errorFormat: 'problem' | 'oauth', url = '/things') => {
    const app = await buildFixtureApp({ errorFormat });
    try {
      const res = await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: deep });
      return { status: res.statusCode, type: res.headers['content-type'], body: res.json() };
    } finally {
      await app.close();
    }
  };

  test('problem+json, OAuth (invalid_request, as malformed JSON is) and OpenAI, each with its code', async () => {
    const problem = await send('problem');
    assert.equal(problem.status, 400);
    assert.match(String(problem.type), /^application\/problem\+json/);
    assert.equal(problem.body.code, 'body_too_deep');
    const oauth = await send('oauth');
    assert.deepEqual([oauth.status, oauth.body.error], [400, 'invalid_request']);
    assert.match(oauth.body.error_description, /more than 128 levels deep/);
    const openai = await send('problem', '/v1/things');
    assert.deepEqual(openai.body, {
      error: { message: 'The request body nests arrays and objects more than 128 levels deep.', type: 'invalid_request_error', code: 'body_too_deep', param: null },
    });
  });
});
