import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { openAiCompatibleAdapter } from '../../../src/gateway/providers/openai-compatible/index.ts';
import { clientWantsUsage } from '../../../src/gateway/providers/adapters.ts';
import type { CallContext, ChatRequest } from '../../../src/gateway/providers/types.ts';

const adapter = openAiCompatibleAdapter({ name: 'Groq' });
const mistral = openAiCompatibleAdapter({ name: 'Mistral', streamUsage: 'always' });
const ctx: CallContext = {
  model: 'llama-3.3-70b-versatile',
  apiKey: 'gsk_test_key',
  baseUrl: new URL('https://api.groq.com/openai/v1'),
  requestId: 'req123',
  created: 1_750_000_000,
};

/** A chat.completion as OpenAI's API reference shows it (reasoning and cache details included). */
const COMPLETION = `{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": { "role": "assistant", "content": "The image shows a wooden boardwalk.", "refusal": null, "annotations": [] },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": { "cached_tokens": 1024, "audio_tokens": 0 },
    "completion_tokens_details": { "reasoning_tokens": 12, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 }
  },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}`;

function problemOf(fn: () => unknown): HttpProblem {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpProblem, `expected an HttpProblem, got ${error}`);
    return error;
  }
  assert.fail('expected a throw');
}

describe('OpenAI-compatible request', () => {
  const request: ChatRequest = {
    model: 'groq/llama-3.3-70b-versatile',
    messages: [{ role: 'user', content: 'Hi' }],
    temperature: 0.2,
    reasoning_format: 'hidden',
  };

  test('the body passes through with model replaced and unknown fields kept, in order', () => {
    const upstream = adapter.chatRequest(request, ctx);
    assert.equal(
      upstream.body,
      '{"model":"llama-3.3-70b-versatile","messages":[{"role":"user","content":"Hi"}],"temperature":0.2,"reasoning_format":"hidden"}',
    );
  });

  test('the path is the base path plus /chat/completions', () => {
    assert.equal(adapter.chatRequest(request, ctx).path, '/openai/v1/chat/completions');
    assert.equal(adapter.chatRequest(request, { ...ctx, baseUrl: new URL('http://10.0.0.5:8000') }).path, '/chat/completions');
    assert.equal(adapter.chatRequest(request, { ...ctx, baseUrl: new URL('http://10.0.0.5:8000/v1/') }).path, '/v1/chat/completions');
  });

  test('the key goes in Authorization: Bearer, with a JSON content-type', () => {
    assert.deepEqual(adapter.chatRequest(request, ctx).headers, {
      authorization: 'Bearer gsk_test_key',
      'content-type': 'application/json',
    });
  });

  test('a stream always asks for usage, keeping the client stream_options', () => {
    const streamed = JSON.parse(adapter.chatRequest({ ...request, stream: true }, ctx).body);
    assert.deepEqual(streamed.stream_options, { include_usage: true });
    const own = JSON.parse(
      adapter.chatRequest({ ...request, stream: true, stream_options: { include_usage: false, include_obfuscation: false } }, ctx).body,
    );
    assert.deepEqual(own.stream_options, { include_usage: true, include_obfuscation: false });
  });

  test('a provider that sends usage unasked and refuses stream_options (Mistral) gets none, even the client\'s', () => {
    assert.equal(JSON.parse(mistral.chatRequest({ ...request, stream: true }, ctx).body).stream_options, undefined);
    const own = mistral.chatRequest({ ...request, stream: true, stream_options: { include_usage: true } }, ctx);
    assert.equal(JSON.parse(own.body).stream_options, undefined);
    assert.equal(JSON.parse(own.body).stream, true);
  });

  test('a non-streamed request gets no stream_options', () => {
    assert.equal(JSON.parse(adapter.chatRequest(request, ctx).body).stream_options, undefined);
  });

  test('whether the client asked for usage is read from its own request', () => {
    assert.equal(clientWantsUsage({ ...request, stream: true }), false);
    assert.equal(clientWantsUsage({ ...request, stream: true, stream_options: { include_usage: true } }), true);
  });
});

describe('OpenAI-compatible response', () => {
  test('the body is passed through byte for byte', () => {
    assert.equal(adapter.chatResponse(200, Buffer.from(COMPLETION), ctx).body, COMPLETION);
  });

  test('usage is read: prompt, cached, completion, reasoning', () => {
    assert.deepEqual(adapter.chatResponse(200, Buffer.from(COMPLETION), ctx).usage, {
      promptTokens: 1117,
      cachedTokens: 1024,
      cacheWriteTokens: 0,
      completionTokens: 46,
      reasoningTokens: 12,
    });
  });

  test('the answering model is read', () => {
    assert.equal(adapter.chatResponse(200, Buffer.from(COMPLETION), ctx).model, 'gpt-4o-2024-08-06');
  });

  test('DeepSeek cache hits (prompt_cache_hit_tokens) count as cached', () => {
    const body = '{"model":"deepseek-chat","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}';
    assert.equal(adapter.chatResponse(200, Buffer.from(body), ctx).usage?.cachedTokens, 64);
  });

  test('no usage object: usage undefined', () => {
    assert.equal(adapter.chatResponse(200, Buffer.from('{"choices":[]}'), ctx).usage, undefined);
  });

  for (const garbage of ['', 'not json', '[1,2]', 'null', '{"id":"x"}', '<html>502 Bad Gateway</html>']) {
    test(`garbage (${JSON.stringify(garbage)}) is a 502 upstream_invalid_response`, () => {
      const problem = problemOf(() => adapter.chatResponse(200, Buffer.from(garbage), ctx));
      assert.equal(problem.status, 502);
      assert.equal(problem.code, 'upstream_invalid_response');
      assert.equal(problem.message, 'The Groq API sent an answer that could not be understood.');
    });
  }

  test('an error inside a 200 (as OpenRouter sends) is the error it names', () => {
    const problem = problemOf(() =>
      adapter.chatResponse(200, Buffer.from('{"error":{"code":429,"message":"Rate limit exceeded: free-models-per-min."}}'), ctx),
    );
    assert.equal(problem.status, 429);
    assert.equal(problem.code, 'upstream_rate_limited');
    assert.equal(problem.message, 'Rate limit exceeded: free-models-per-min.');
  });
});

describe('OpenAI-compatible upstream errors', () => {
  const body = (error: object) => Buffer.from(JSON.stringify({ error }));

  test('401: status kept, message kept, said to be about the stored provider key, with a code of the gateway', () => {
    const problem = adapter.upstreamError(
      401,
      body({ message: 'Incorrect API key provided: gsk_****key.', type: 'invalid_request_error', code: 'invalid_api_key', param: null }),
      {},
    );
    assert.equal(problem.status, 401);
    assert.equal(problem.code, 'upstream_authentication_failed', "not the gateway key's own invalid_api_key");
    assert.equal(problem.type, 'invalid_request_error');
    assert.match(problem.message, /^The .+ API refused the .+ key stored for this tenant: Incorrect API key provided: gsk_\*\*\*\*key\.$/);
    assert.equal(problem.param, undefined);
  });

  test('400 keeps param', () => {
    const problem = adapter.upstreamError(
      400,
      body({ message: "Invalid type for 'temperature'.", type: 'invalid_request_error', code: 'invalid_type', param: 'temperature' }),
      {},
    );
    assert.deepEqual([problem.status, problem.code, problem.param], [400, 'invalid_type', 'temperature']);
  });

  for (const status of [403, 404, 413, 422]) {
    test(`${status} stays ${status}; code null gets a stable code`, () => {
      const problem = adapter.upstreamError(status, body({ message: 'No.', type: 'invalid_request_error', code: null }), {});
      assert.equal(problem.status, status);
      assert.equal(
        problem.code,
        { 403: 'upstream_permission_denied', 404: 'upstream_not_found', 413: 'upstream_request_too_large', 422: 'upstream_unprocessable' }[status],
      );
      assert.ok(problem.message.endsWith('No.'));
    });
  }

  test('429 keeps Retry-After', () => {
    const problem = adapter.upstreamError(
      429,
      body({ message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' }),
      { 'retry-after': '20', 'x-ratelimit-remaining-requests': '0' },
    );
    assert.equal(problem.status, 429);
    assert.equal(problem.code, 'rate_limit_exceeded');
    assert.deepEqual(problem.headers, { 'retry-after': '20' });
  });

  test('an invalid Retry-After is not forwarded', () => {
    assert.deepEqual(adapter.upstreamError(429, body({ message: 'slow down' }), { 'retry-after': 'soon\r\nx: y' }).headers, {});
  });

  for (const status of [500, 502, 503, 504]) {
    test(`${status} becomes 502 upstream_error, the message kept`, () => {
      const problem = adapter.upstreamError(status, body({ message: 'The server had an error while processing your request.', type: 'server_error', code: null }), {});
      assert.equal(problem.status, 502);
      assert.equal(problem.code, 'upstream_error');
      assert.equal(problem.type, 'api_error');
      assert.equal(problem.message, 'The server had an error while processing your request.');
    });
  }

  test('an unparseable body: "The <provider> API answered HTTP <status>."', () => {
    const problem = adapter.upstreamError(503, Buffer.from('<html>Service Unavailable</html>'), {});
    assert.equal(problem.status, 502);
    assert.equal(problem.message, 'The Groq API answered HTTP 503.');
    assert.equal(adapter.upstreamError(404, Buffer.from(''), {}).message, 'The Groq API answered HTTP 404.');
  });

  test('a bare {error: "text"} or {message} body keeps the text', () => {
    assert.equal(adapter.upstreamError(400, Buffer.from('{"error":"model not loaded"}'), {}).message, 'model not loaded');
    assert.equal(adapter.upstreamError(400, Buffer.from('{"message":"bad input","object":"error"}'), {}).message, 'bad input');
  });
});
