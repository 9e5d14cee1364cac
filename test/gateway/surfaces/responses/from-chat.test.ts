import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { itemId, responseFromChat } from '../../../../src/gateway/surfaces/responses/from-chat.ts';
import { COMPLETION, CTX, EXPECTED_RESPONSE } from './stream-fixtures.ts';

const answer = (message: unknown, finish: unknown = 'stop', extra: Record<string, unknown> = {}) => ({
  id: 'c',
  object: 'chat.completion',
  choices: [{ index: 0, message, finish_reason: finish }],
  ...extra,
});

describe('responseFromChat: a Chat Completions answer as a response object', () => {
  test('reasoning, text and a namespaced and a plain call, with usage and cost, byte for byte', () => {
    assert.equal(JSON.stringify(responseFromChat(COMPLETION, CTX)), JSON.stringify(EXPECTED_RESPONSE));
  });

  test('the request settings are echoed, OpenAI defaults where none was set', () => {
    const request = {
      model: 'm',
      input: 'x',
      instructions: 'I',
      max_output_tokens: 10,
      parallel_tool_calls: false,
      previous_response_id: 'resp_prev',
      reasoning: { effort: 'low', summary: 'detailed' },
      store: false,
      temperature: 0.2,
      text: { format: { type: 'json_object' } },
      tool_choice: 'required',
      tools: [{ type: 'function', name: 'f' }],
      top_p: 0.5,
      truncation: 'auto',
      user: 'u',
      metadata: { k: 'v' },
    };
    const response = responseFromChat(answer({ role: 'assistant', content: '{}' }), { ...CTX, request });
    const { id, object, created_at, status, error, incomplete_details, model, output, usage, ...echo } = response;
    assert.deepEqual(echo, {
      instructions: 'I',
      max_output_tokens: 10,
      parallel_tool_calls: false,
      previous_response_id: 'resp_prev',
      reasoning: { effort: 'low', summary: 'detailed' },
      store: false,
      temperature: 0.2,
      text: { format: { type: 'json_object' } },
      tool_choice: 'required',
      tools: [{ type: 'function', name: 'f' }],
      top_p: 0.5,
      truncation: 'auto',
      user: 'u',
      metadata: { k: 'v' },
    });
    // The answer named no model: the one the client asked for; it reported no usage: null.
    assert.equal(model, CTX.model);
    assert.equal(usage, null);
    const bare = responseFromChat(answer({ role: 'assistant', content: 'hi' }), { ...CTX, request: { model: 'm', input: 'x' } });
    assert.deepEqual(
      [bare['instructions'], bare['max_output_tokens'], bare['previous_response_id'], bare['reasoning'], bare['user'], bare['metadata'], bare['tools']],
      [null, null, null, { effort: null, summary: null }, null, {}, []],
    );
  });

  test('length is incomplete (max_output_tokens), its last item too; content_filter is incomplete (content_filter)', () => {
    const cut = responseFromChat(answer({ role: 'assistant', content: 'Half a sen' }, 'length'), CTX);
    assert.equal(cut['status'], 'incomplete');
    assert.deepEqual(cut['incomplete_details'], { reason: 'max_output_tokens' });
    assert.equal((cut['output'] as { status: string }[])[0]!.status, 'incomplete');
    const cutCall = responseFromChat(answer({ role: 'assistant', content: 'x', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a"' } }] }, 'length'), CTX);
    assert.deepEqual(
      (cutCall['output'] as { status: string }[]).map((item) => item.status),
      ['completed', 'incomplete'],
    );
    const filtered = responseFromChat(answer({ role: 'assistant', content: '' }, 'content_filter'), CTX);
    assert.deepEqual([filtered['status'], filtered['incomplete_details'], filtered['output']], ['incomplete', { reason: 'content_filter' }, []]);
  });

  test('a refusal is a refusal part; text given as parts is joined; OpenRouter-style reasoning is read too', () => {
    const refused = responseFromChat(answer({ role: 'assistant', content: null, refusal: 'I cannot help with that.' }), CTX);
    assert.deepEqual(refused['output'], [
      { id: 'msg_0a1b2c0000', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
    ]);
    const parts = responseFromChat(answer({ role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], reasoning: 'hm' }), CTX);
    assert.deepEqual(
      (parts['output'] as { type: string }[]).map((item) => item.type),
      ['reasoning', 'message'],
    );
    assert.equal(((parts['output'] as { content: { text: string }[] }[])[1]!.content[0]!.text), 'ab');
  });

  test('a call without an id gets one from the response id; item ids are unique and derive from the response id', () => {
    const response = responseFromChat(answer({ role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }, 'junk'] }), CTX);
    assert.deepEqual(response['output'], [{ id: 'fc_0a1b2c0000', type: 'function_call', status: 'completed', call_id: 'call_0a1b2c0000', name: 'f', arguments: '{}' }]);
    const ids = new Set<string>();
    for (let i = 0; i < 70_000; i++) ids.add(itemId('resp_ab', 'msg', i));
    assert.equal(ids.size, 70_000);
    assert.equal(itemId('resp_ab', 'fc', 17), 'fc_ab0011');
  });

  test('an answer without a choice is a response without output, never a throw', () => {
    const empty = responseFromChat({ choices: [] }, CTX);
    assert.deepEqual([empty['status'], empty['output'], empty['model']], ['completed', [], CTX.model]);
    assert.deepEqual(responseFromChat({}, CTX)['output'], []);
  });
});
