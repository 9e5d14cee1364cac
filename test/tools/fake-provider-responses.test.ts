import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';

/**
 * The fake provider's Responses API and embeddings, read by the official
 * openai SDK over a real port, and the raw event stream checked for OpenAI's
 * order and sequence numbers.
 */

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
};

/** Codex CLI's shell tool, as it offers it (abridged). */
const EXEC_TOOL = {
  type: 'function' as const,
  name: 'exec_command',
  strict: false,
  parameters: { type: 'object', properties: { cmd: { type: 'string' }, workdir: { type: 'string' } }, required: ['cmd'], additionalProperties: false },
};

describe('fake provider, OpenAI Responses and embeddings', () => {
  let fake: FakeProvider;
  let client: OpenAI;
  before(async () => {
    fake = await createFakeProvider();
    client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: 'sk-fake-test', maxRetries: 0, logLevel: 'off' });
  });
  beforeEach(() => fake.reset());
  after(() => fake.close());

  test('responses.create echoes the last user text, reports usage, and is billed', async () => {
    fake.setBehaviour({ promptTokens: 50, completionTokens: 4, cachedTokens: 30, reasoningTokens: 2 });
    const res = await client.responses.create({
      model: 'fake-model',
      instructions: 'be brief',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'first' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello there' }, { type: 'input_image', image_url: 'data:image/png;base64,AA==', detail: 'auto' }] },
      ],
      store: false,
      include: ['reasoning.encrypted_content'],
      previous_response_id: 'resp_earlier',
      // @ts-expect-error: an unknown field, as Codex sends, is accepted
      client_metadata: { x: 1 },
    });
    assert.match(res.id, /^resp_/);
    assert.equal(res.object, 'response');
    assert.equal(res.status, 'completed');
    assert.equal(res.output_text, 'echo: hello there');
    assert.equal(res.instructions, 'be brief');
    assert.equal(res.previous_response_id, 'resp_earlier');
    assert.deepEqual(res.usage, { input_tokens: 50, input_tokens_details: { cached_tokens: 30 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 54 });
    assert.equal(fake.calls.last()?.route, 'openai.responses');
    assert.deepEqual(fake.ledger.byModel().get('fake-model'), { calls: 1, promptTokens: 50, cachedTokens: 30, cacheWriteTokens: 0, completionTokens: 4, reasoningTokens: 2 });
  });

  test('a string input is the user text; a missing model is a 400 in OpenAI shape', async () => {
    const res = await client.responses.create({ model: 'fake-model', input: 'just this' });
    assert.equal(res.output_text, 'echo: just this');
    await assert.rejects(client.responses.create({ input: 'x' } as never), (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === 'model');
  });

  test('responses.stream: text deltas one per word, and finalResponse() equals the completed response', async () => {
    const stream = client.responses.stream({ model: 'fake-model', input: 'one two three' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    assert.deepEqual(deltas, ['echo:', ' one', ' two', ' three']);
    assert.equal(final.output_text, 'echo: one two three');
    assert.equal(final.status, 'completed');
    assert.equal(final.usage?.output_tokens, 4);
  });

  test('a function call round trip: the call, then function_call_output echoed', async () => {
    const first = await client.responses.create({ model: 'fake-model', input: 'please call tool for Paris', tools: [WEATHER_TOOL] });
    const call = first.output[0];
    assert.equal(call?.type, 'function_call');
    if (call?.type !== 'function_call') return;
    assert.equal(call.name, 'get_weather');
    assert.match(call.call_id, /^call_/);
    assert.deepEqual(JSON.parse(call.arguments), { city: 'please call tool for Paris', days: 1 });
    const second = await client.responses.create({
      model: 'fake-model',
      tools: [WEATHER_TOOL],
      input: [
        { role: 'user', content: 'please call tool for Paris' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
        call,
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21C' },
      ],
    });
    assert.equal(second.output_text, 'echo: sunny, 21C');
    // tool_choice forces a named call; "none" never calls.
    const forced = await client.responses.create({ model: 'fake-model', input: 'hi', tools: [WEATHER_TOOL], tool_choice: { type: 'function', name: 'get_weather' } });
    assert.equal(forced.output[0]?.type, 'function_call');
    const none = await client.responses.create({ model: 'fake-model', input: 'call tool', tools: [WEATHER_TOOL], tool_choice: 'none' });
    assert.equal(none.output[0]?.type, 'message');
  });

  test("a streamed function call: arguments deltas, and finalResponse() holds the call", async () => {
    const stream = client.responses.stream({ model: 'fake-model', input: 'x', tools: [WEATHER_TOOL], tool_choice: 'required' });
    const types: string[] = [];
    stream.on('event', (e) => types.push(e.type));
    const final = await stream.finalResponse();
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const call = final.output[0];
    assert.equal(call?.type === 'function_call' && JSON.parse(call.arguments).days, 1);
  });

  test('the raw stream: named events in OpenAI order, sequence_number 0, 1, 2, ...', async () => {
    const res = await fetch(`${fake.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', input: 'a b', stream: true }),
    });
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const events = (await res.text()).split('\n\n').filter(Boolean).map((block) => {
      const [name, data] = block.split('\n');
      const value = JSON.parse(data!.slice(6)) as { type: string; sequence_number: number };
      assert.equal(name, `event: ${value.type}`);
      return value;
    });
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
  });

  test('stream-error: an error event then response.failed, numbered on from the cut; status faults as on the Chat side', async () => {
    const res = await fetch(`${fake.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json', 'x-fake-fault': 'stream-error', 'x-fake-fault-after-chunks': '1' },
      body: JSON.stringify({ model: 'fake-model', input: 'a b c', stream: true }),
    });
    const events = (await res.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(block.split('\n')[1]!.slice(6)) as { type: string; sequence_number: number });
    assert.deepEqual(events.slice(-3).map((e) => [e.type, e.sequence_number]), [['response.output_text.delta', 4], ['error', 5], ['response.failed', 6]]);
    fake.setBehaviour({ fault: '429', retryAfterS: 3 }, { requests: 1 });
    await assert.rejects(client.responses.create({ model: 'fake-model', input: 'x' }), (err: unknown) => err instanceof OpenAI.RateLimitError && err.headers.get('retry-after') === '3');
    fake.setBehaviour({ fault: 'stream-error' }, { requests: 1 });
    await assert.rejects(client.responses.create({ model: 'fake-model', input: 'x' }), OpenAI.InternalServerError);
  });

  test('an agent turn (behaviour agent + thinking): a reasoning item then the scripted function_call, streamed in order; then the answer quoting the function_call_output', async () => {
    fake.setBehaviour({ agent: { tool: 'exec_command', input: { cmd: 'cat notes.txt' }, answer: 'The file says:' }, thinking: 'I will read it.' });
    const ask = { type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text: 'read notes.txt' }] };
    const request = { model: 'fake-model', tools: [EXEC_TOOL, WEATHER_TOOL], reasoning: { summary: 'auto' as const }, include: ['reasoning.encrypted_content' as const], store: false };
    const raw = await fetch(`${fake.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ ...request, input: [ask], stream: true }),
    });
    const events = (await raw.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(block.split('\n')[1]!.slice(6)) as Record<string, unknown>);
    assert.deepEqual(
      events.map((e) => `${e['type']}${e['output_index'] === undefined ? '' : `:${e['output_index']}`}`),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added:0',
        'response.reasoning_summary_part.added:0',
        'response.reasoning_summary_text.delta:0', // one per word
        'response.reasoning_summary_text.delta:0',
        'response.reasoning_summary_text.delta:0',
        'response.reasoning_summary_text.delta:0',
        'response.reasoning_summary_text.done:0',
        'response.reasoning_summary_part.done:0',
        'response.output_item.done:0',
        'response.output_item.added:1',
        'response.function_call_arguments.delta:1',
        'response.function_call_arguments.delta:1',
        'response.function_call_arguments.delta:1',
        'response.function_call_arguments.done:1',
        'response.output_item.done:1',
        'response.completed',
      ],
    );
    assert.deepEqual(
      events.map((e) => e['sequence_number']),
      events.map((_, i) => i),
    );

    const first = await client.responses.stream({ ...request, input: [ask] }).finalResponse();
    const [reasoning, call] = first.output;
    assert.ok(reasoning?.type === 'reasoning' && call?.type === 'function_call');
    assert.deepEqual(reasoning.summary, [{ type: 'summary_text', text: 'I will read it.' }]);
    assert.match(reasoning.encrypted_content ?? '', /^fakeenc1\./);
    assert.equal(call.name, 'exec_command');
    assert.deepEqual(JSON.parse(call.arguments), { cmd: 'cat notes.txt' });

    // Stateless, as Codex sends it: the reasoning item and the call come back, then the tool's output.
    const next = (item: typeof reasoning) =>
      client.responses.create({ ...request, input: [ask, item, call, { type: 'function_call_output', call_id: call.call_id, output: 'Output:\nThe code word is PELICAN.' }] });
    const second = await next(reasoning);
    assert.equal(second.output.at(-1)?.type, 'message');
    assert.equal(second.output_text, 'The file says: Output:\nThe code word is PELICAN.');
    // A changed encrypted_content is refused as OpenAI refuses it.
    await assert.rejects(
      next({ ...reasoning, encrypted_content: `${reasoning.encrypted_content!.slice(0, -2)}AA` }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.code === 'invalid_encrypted_content' && err.message.includes(`item ${reasoning.id} could not be verified`),
    );
  });

  test('an agent turn: a side request without the scripted tool gets the echo; no reasoning object, no reasoning item; no include, no encrypted_content', async () => {
    fake.setBehaviour({ agent: { tool: 'exec_command', input: { cmd: 'true' } }, thinking: 'hmm' });
    const side = await client.responses.create({ model: 'fake-model', input: 'a title please', tools: [WEATHER_TOOL] });
    assert.deepEqual(side.output.map((o) => o.type), ['message']);
    assert.equal(side.output_text, 'echo: a title please');
    const plain = await client.responses.create({ model: 'fake-model', input: 'go', tools: [EXEC_TOOL], reasoning: { effort: 'low' } });
    assert.deepEqual(plain.output.map((o) => o.type), ['reasoning', 'function_call']);
    assert.deepEqual(plain.output[0], { id: plain.output[0]!.id, type: 'reasoning', summary: [] });
    // With behaviour thinking unset, a reasoning item sent back is not checked.
    fake.setBehaviour({ thinking: undefined });
    const unchecked = await client.responses.create({ model: 'fake-model', input: [{ type: 'reasoning', id: 'rs_x', summary: [], encrypted_content: 'opaque' }, { role: 'user', content: 'hi' }] });
    assert.equal(unchecked.output_text, 'echo: hi');
  });

  test('embeddings: float and base64 decode to the same numbers, deterministic, unit length, billed and logged', async () => {
    const input = ['alpha', 'beta'];
    const floats = await client.embeddings.create({ model: 'fake-embed', input, encoding_format: 'float' });
    assert.equal(floats.object, 'list');
    assert.deepEqual(floats.data.map((d) => [d.object, d.index, d.embedding.length]), [['embedding', 0, 8], ['embedding', 1, 8]]);
    assert.notDeepEqual(floats.data[0]!.embedding, floats.data[1]!.embedding);
    const norm = Math.hypot(...floats.data[0]!.embedding);
    assert.ok(Math.abs(norm - 1) < 1e-6, String(norm));
    // The SDK asks for base64 when no format is given and decodes it itself.
    const decodedBySdk = await client.embeddings.create({ model: 'fake-embed', input });
    assert.deepEqual(decodedBySdk.data.map((d) => d.embedding), floats.data.map((d) => d.embedding));
    const raw = await client.embeddings.create({ model: 'fake-embed', input: 'alpha', encoding_format: 'base64' });
    const bytes = Buffer.from(raw.data[0]!.embedding as unknown as string, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    assert.deepEqual(decoded, floats.data[0]!.embedding);
    const again = await client.embeddings.create({ model: 'fake-embed', input: 'beta', encoding_format: 'float', dimensions: 8 });
    assert.deepEqual(again.data[0]!.embedding, floats.data[1]!.embedding);
    const wide = await client.embeddings.create({ model: 'fake-embed', input: [[1, 2, 3]], encoding_format: 'float', dimensions: 256 });
    assert.equal(wide.data[0]!.embedding.length, 256);
    assert.equal(wide.usage.prompt_tokens, 3);
    assert.equal(floats.usage.prompt_tokens, 3); // alpha 2, beta 1: a quarter of the length, rounded up
    assert.equal(fake.calls.last()?.route, 'openai.embeddings');
    assert.equal(fake.ledger.byModel().get('fake-embed')?.calls, 5);
    for (const bad of [{ input: '' }, { input: [] }, { input: 'x', dimensions: 0 }, { input: 'x', encoding_format: 'hex' }]) {
      await assert.rejects(client.embeddings.create({ model: 'fake-embed', ...bad } as never), OpenAI.BadRequestError);
    }
  });
});
