import assert from 'node:assert/strict';
import { test } from 'node:test';
import { adapterFor, buildAdapters } from '../../../src/gateway/providers/adapters.ts';
import { PROVIDERS } from '../../../src/gateway/providers/registry.ts';
import type { CallContext } from '../../../src/gateway/providers/types.ts';

const options = { anthropicDefaultMaxTokens: 2048 };
const ctx: CallContext = { model: 'm', apiKey: 'k', baseUrl: new URL('https://upstream.example/v1'), requestId: 'r', created: 1 };

test('every registered provider has an adapter of its wire format', () => {
  const adapters = buildAdapters(PROVIDERS, options);
  assert.deepEqual([...adapters.keys()], PROVIDERS.map((p) => p.id));
  for (const provider of PROVIDERS) {
    const request = adapters.get(provider.id)!.chatRequest({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }, ctx);
    assert.equal(request.path, provider.format === 'anthropic' ? '/v1/messages' : '/v1/chat/completions', provider.id);
  }
});

test('the Anthropic adapter gets the configured default max_tokens', () => {
  const adapter = adapterFor({ format: 'anthropic', name: 'Anthropic' }, options);
  assert.equal(JSON.parse(adapter.chatRequest({ model: 'x', messages: [] }, ctx).body).max_tokens, 2048);
});

test('Mistral is asked for no stream_options; the others are', () => {
  const adapters = buildAdapters(PROVIDERS, options);
  const streamed = { model: 'x', messages: [], stream: true };
  assert.equal(JSON.parse(adapters.get('mistral')!.chatRequest(streamed, ctx).body).stream_options, undefined);
  assert.deepEqual(JSON.parse(adapters.get('openai')!.chatRequest(streamed, ctx).body).stream_options, { include_usage: true });
});

test('error messages name the provider', () => {
  const adapter = adapterFor({ format: 'openai', name: 'Mistral' }, options);
  assert.equal(adapter.upstreamError(500, Buffer.from('oops'), {}).message, 'The Mistral API answered HTTP 500.');
});
