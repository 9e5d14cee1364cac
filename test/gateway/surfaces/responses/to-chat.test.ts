import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { decodeResponses, type ResponsesToChatOptions } from '../../../../src/gateway/surfaces/responses/to-chat.ts';

const compatible: ResponsesToChatOptions = { reasoning: false, maxTokensField: 'max_tokens', maxOutputTokens: undefined, anthropic: false };
const reasoner: ResponsesToChatOptions = { reasoning: true, maxTokensField: 'max_completion_tokens', maxOutputTokens: 100_000, anthropic: false };
const anthropic: ResponsesToChatOptions = { reasoning: false, maxTokensField: 'max_tokens', maxOutputTokens: 64_000, anthropic: true };

/** Decodes JSON text, as the surface receives it; `json` is the chat request as JSON text (key order included). */
function decode(body: unknown, options: ResponsesToChatOptions = compatible) {
  const decoded = decodeResponses(JSON.parse(JSON.stringify(body)), options);
  return { ...decoded, json: JSON.stringify(decoded.chat) };
}

const SHELL_PARAMETERS = { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } }, required: ['command'] };

/** A Codex-shaped request, trimmed: developer messages, ids on items, a reasoning item, a function call round trip, namespace and web_search tools. */
const CODEX = {
  model: 'gpt-5.5-codex',
  instructions: undefined,
  input: [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }, { type: 'input_text', text: 'List the files.' }] },
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Run ls.' }], encrypted_content: 'gAAAA' },
    { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'Listing.', annotations: [] }] },
    { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'shell', arguments: '{"command":["ls"]}' },
    { type: 'function_call', id: 'fc_2', call_id: 'call_2', name: 'read', namespace: 'mcp__fs__', arguments: '{"path":"a"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'a.txt\nb.txt' },
    { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'alpha' }] },
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
    { role: 'user', content: 'Go on.' },
  ],
  tools: [
    { type: 'function', name: 'shell', description: 'Runs a command', strict: false, parameters: SHELL_PARAMETERS },
    {
      type: 'namespace',
      name: 'mcp__fs__',
      description: 'Files',
      tools: [
        { type: 'function', name: 'read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
        { type: 'custom', name: 'patch', format: { type: 'grammar' } },
      ],
    },
    { type: 'web_search', external_web_access: false },
    { type: 'file_search', vector_store_ids: ['vs_1'] },
  ],
  tool_choice: 'auto',
  parallel_tool_calls: false,
  reasoning: { effort: 'high', summary: 'auto' },
  store: false,
  stream: true,
  include: ['reasoning.encrypted_content'],
  prompt_cache_key: 'session-1',
  client_metadata: { x: 1 },
  metadata: { a: 'b' },
  max_output_tokens: 200_000,
  temperature: 0.5,
  top_p: 0.9,
  user: 'u1',
  truncation: 'auto',
  service_tier: 'auto',
};

describe('decodeResponses: Responses request -> Chat Completions', () => {
  test('a Codex-shaped request, byte for byte', () => {
    const { json, omittedTools, webSearch, droppedReasoning, uncarried, toolNames } = decode(CODEX, reasoner);
    assert.equal(uncarried, undefined);
    assert.deepEqual(omittedTools, ['custom', 'web_search', 'file_search']);
    assert.equal(webSearch, false);
    assert.equal(droppedReasoning, 1);
    assert.deepEqual([...toolNames], [['mcp__fs____read', { name: 'read', namespace: 'mcp__fs__' }]]);
    assert.equal(
      json,
      JSON.stringify({
        model: 'gpt-5.5-codex',
        messages: [
          { role: 'system', content: 'You are Codex.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: '<environment_context>cwd</environment_context>' },
              { type: 'text', text: 'List the files.' },
            ],
          },
          {
            role: 'assistant',
            content: 'Listing.',
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command":["ls"]}' } },
              { id: 'call_2', type: 'function', function: { name: 'mcp__fs____read', arguments: '{"path":"a"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'a.txt\nb.txt' },
          { role: 'tool', tool_call_id: 'call_2', content: 'alpha' },
          { role: 'user', content: 'Go on.' },
        ],
        max_completion_tokens: 100000,
        temperature: 0.5,
        top_p: 0.9,
        tools: [
          { type: 'function', function: { name: 'shell', description: 'Runs a command', parameters: SHELL_PARAMETERS, strict: false } },
          { type: 'function', function: { name: 'mcp__fs____read', parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
        ],
        tool_choice: 'auto',
        parallel_tool_calls: false,
        reasoning_effort: 'high',
        user: 'u1',
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
  });

  test('for Anthropic, web_search is a marker rather than omitted; without reasoning, effort is left out; max tokens lowered', () => {
    const { chat, omittedTools, webSearch } = decode(CODEX, anthropic);
    assert.equal(webSearch, true);
    assert.deepEqual(omittedTools, ['custom', 'file_search']);
    assert.equal(chat['reasoning_effort'], undefined);
    assert.equal(chat['max_tokens'], 64000);
    assert.equal(chat['max_completion_tokens'], undefined);
    const preview = decode({ model: 'm', input: 'hi', tools: [{ type: 'web_search_preview_2025_03_11' }] }, anthropic);
    assert.equal(preview.webSearch, true);
    assert.deepEqual(preview.omittedTools, []);
    assert.equal(decode({ model: 'm', input: 'hi', tools: [{ type: 'web_search_preview' }] }).omittedTools[0], 'web_search_preview');
    assert.equal(decode({ model: 'm', input: 'hi', max_output_tokens: 5000 }, anthropic).chat['max_tokens'], 5000);
  });

  test('a string input and instructions; developer and system become system; no field beyond what was given', () => {
    assert.equal(decode({ model: 'm', input: 'Hello', instructions: 'Be brief.' }).json, JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }] }));
    const { chat } = decode({
      model: 'm',
      input: [
        { role: 'system', content: 'S' },
        { role: 'developer', content: [{ type: 'input_text', text: 'D1' }, { type: 'input_text', text: 'D2' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'U' }] },
      ],
    });
    assert.deepEqual(chat.messages, [
      { role: 'system', content: 'S' },
      {
        role: 'system',
        content: [
          { type: 'text', text: 'D1' },
          { type: 'text', text: 'D2' },
        ],
      },
      { role: 'user', content: 'U' },
    ]);
  });

  test('assistant items in a row are one turn, across reasoning; function outputs follow as tool messages', () => {
    const { chat, droppedReasoning } = decode({
      model: 'm',
      input: [
        { role: 'user', content: 'go' },
        { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
        { type: 'reasoning', summary: [] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'one' }, { type: 'refusal', refusal: ' two' }] },
        { type: 'message', role: 'assistant', content: 'three' },
        { type: 'function_call', call_id: 'c2', name: 'b', arguments: '{"x":1}' },
        { type: 'function_call_output', call_id: 'c1', output: '' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'p' }, { type: 'input_text', text: 'q' }] },
        { role: 'assistant', content: 'done' },
      ],
    });
    assert.equal(droppedReasoning, 1);
    assert.deepEqual(chat.messages, [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'one two' },
          { type: 'text', text: 'three' },
        ],
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'b', arguments: '{"x":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '' },
      {
        role: 'tool',
        tool_call_id: 'c2',
        content: [
          { type: 'text', text: 'p' },
          { type: 'text', text: 'q' },
        ],
      },
      { role: 'assistant', content: 'done' },
    ]);
  });

  test('images: image_url parts with their detail; images of function outputs follow the tool messages as one user message', () => {
    const { chat, uncarried } = decode({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0K', detail: 'high' },
            { type: 'input_image', image_url: 'https://example.com/a.jpg', detail: 'original' },
            { type: 'input_text', text: 'Compare.' },
          ],
        },
        { type: 'function_call', call_id: 'c1', name: 'shot', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'shot', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'taken' }, { type: 'input_image', image_url: 'https://e.com/1.png' }] },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_image', image_url: 'https://e.com/2.png' }] },
        { role: 'user', content: 'What do you see?' },
      ],
    });
    assert.equal(uncarried, undefined);
    assert.deepEqual(chat.messages, [
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K', detail: 'high' } },
          { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
          { type: 'text', text: 'Compare.' },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'shot', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'shot', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'taken' },
      { role: 'tool', tool_call_id: 'c2', content: '' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'https://e.com/1.png' } },
          { type: 'image_url', image_url: { url: 'https://e.com/2.png' } },
        ],
      },
      { role: 'user', content: 'What do you see?' },
    ]);
  });

  test('uncarried, naming what and where: file_id images, input_file, images outside user messages, item_reference, other item and part types', () => {
    const first = (input: unknown[]) => decode({ model: 'm', input }).uncarried;
    const fileImage = first([{ role: 'user', content: [{ type: 'input_text', text: 'x' }, { type: 'input_image', file_id: 'file-1' }] }]);
    assert.equal(fileImage?.status, 400);
    assert.equal(fileImage?.code, 'unsupported_content');
    assert.equal(fileImage?.type, 'invalid_request_error');
    assert.equal(fileImage?.param, 'input[0].content[1].file_id');
    assert.match(fileImage?.message ?? '', /an image given by file_id cannot be sent to this model/);
    const file = first([{ role: 'user', content: [{ type: 'input_file', file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' }] }]);
    assert.equal(file?.param, 'input[0].content[0]');
    assert.match(file?.message ?? '', /^input\[0\]\.content\[0\]: input_file parts cannot be sent to this model/);
    assert.equal(first([{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_file', file_id: 'f' }] }])?.param, 'input[0].output[0]');
    assert.match(first([{ role: 'system', content: [{ type: 'input_image', image_url: 'https://e.com/a.png' }] }])?.message ?? '', /an image in a system message/);
    assert.match(first([{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://e.com/a.png' }] }])?.message ?? '', /an image in an assistant message/);
    const reference = first([{ role: 'user', content: 'hi' }, { type: 'item_reference', id: 'msg_1' }]);
    assert.equal(reference?.param, 'input[1]');
    assert.match(reference?.message ?? '', /"item_reference" cannot be sent to this model.*send the item itself/);
    for (const type of ['file_search_call', 'computer_call', 'custom_tool_call', 'compaction', 'something_new']) {
      const problem = first([{ type, id: 'x' }]);
      assert.equal(problem?.code, 'unsupported_content', type);
      assert.match(problem?.message ?? '', new RegExp(`items of type "${type}"`));
    }
    assert.match(first([{ role: 'user', content: [{ type: 'input_audio', data: 'x' }] }])?.message ?? '', /content parts of type "input_audio"/);
    // The first problem wins, and the rest is still decoded.
    const both = decode({ model: 'm', input: [{ type: 'item_reference', id: 'a' }, { type: 'computer_call' }, { role: 'user', content: 'still here' }] });
    assert.equal(both.uncarried?.param, 'input[0]');
    assert.deepEqual(both.chat.messages, [{ role: 'user', content: 'still here' }]);
  });

  test('namespace tools: sent as namespace__name, a call named back by the table; tool_choice by the bare or the Chat name', () => {
    const tools = [
      { type: 'function', name: 'plain' },
      { type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup', description: 'Finds one' }] },
      { type: 'namespace', name: 'erp', description: 'ERP', tools: [{ type: 'function', name: 'lookup' }, { type: 'function', name: 'plain' }] },
    ];
    const decoded = decode({ model: 'm', input: 'hi', tools, tool_choice: { type: 'function', name: 'crm__lookup' } });
    assert.equal(decoded.uncarried, undefined);
    assert.deepEqual(
      (decoded.chat['tools'] as { function: { name: string } }[]).map((t) => t.function.name),
      ['plain', 'crm__lookup', 'erp__lookup', 'erp__plain'],
    );
    assert.deepEqual((decoded.chat['tools'] as unknown[])[1], { type: 'function', function: { name: 'crm__lookup', description: 'Finds one', parameters: { type: 'object', properties: {} } } });
    assert.deepEqual([...decoded.toolNames.keys()], ['crm__lookup', 'erp__lookup', 'erp__plain']);
    assert.deepEqual(decoded.chat['tool_choice'], { type: 'function', function: { name: 'crm__lookup' } });
    const choice = (name: string) => decode({ model: 'm', input: 'hi', tools, tool_choice: { type: 'function', name } }).chat['tool_choice'];
    // A plain function wins over a namespaced one of the same bare name; an ambiguous bare name is sent as given.
    assert.deepEqual(choice('plain'), { type: 'function', function: { name: 'plain' } });
    assert.deepEqual(choice('lookup'), { type: 'function', function: { name: 'lookup' } });
    const single = decode({ model: 'm', input: 'hi', tools: [tools[1]], tool_choice: { type: 'function', name: 'lookup' } });
    assert.deepEqual(single.chat['tool_choice'], { type: 'function', function: { name: 'crm__lookup' } });
    const clash = decode({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'crm__lookup' }, tools[1]] });
    assert.equal(clash.uncarried?.param, 'tools[1].tools[0].name');
    assert.match(clash.uncarried?.message ?? '', /"crm__lookup" is used twice/);
  });

  test('tool_choice: auto, none, required as they are; function; allowed_tools narrows the tools; forcing a built-in tool is uncarried', () => {
    const tools = [{ type: 'function', name: 'a' }, { type: 'function', name: 'b' }, { type: 'file_search' }, { type: 'web_search' }];
    const choose = (tool_choice: unknown, options = compatible) => decode({ model: 'm', input: 'hi', tools, tool_choice }, options);
    for (const mode of ['auto', 'none', 'required']) assert.equal(choose(mode).chat['tool_choice'], mode);
    assert.deepEqual(choose({ type: 'function', name: 'b' }).chat['tool_choice'], { type: 'function', function: { name: 'b' } });
    const allowed = choose({ type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'b' }, { type: 'file_search' }] });
    assert.equal(allowed.uncarried, undefined);
    assert.equal(allowed.chat['tool_choice'], 'required');
    assert.deepEqual(allowed.chat['tools'], [{ type: 'function', function: { name: 'b', parameters: { type: 'object', properties: {} } } }]);
    const onlyBuiltIn = choose({ type: 'allowed_tools', mode: 'required', tools: [{ type: 'file_search' }] });
    assert.equal(onlyBuiltIn.uncarried?.param, 'tool_choice');
    assert.equal(onlyBuiltIn.chat['tools'], undefined);
    for (const type of ['file_search', 'web_search_preview', 'computer_use_preview', 'mcp', 'custom', 'apply_patch']) {
      const forced = choose({ type, server_label: 'x', name: 'x' });
      assert.equal(forced.uncarried?.code, 'unsupported_content', type);
      assert.equal(forced.uncarried?.param, 'tool_choice');
      assert.match(forced.uncarried?.message ?? '', new RegExp(`forces a tool of type "${type}"`));
    }
    // Even on Anthropic, where the caller adds its web search: Chat's tool_choice cannot name a server tool.
    assert.equal(choose({ type: 'web_search' }, anthropic).uncarried?.param, 'tool_choice');
    const onlyOmitted = decode({ model: 'm', input: 'hi', tools: [{ type: 'code_interpreter' }], tool_choice: 'required' });
    assert.equal(onlyOmitted.uncarried?.param, 'tool_choice');
    assert.match(onlyOmitted.uncarried?.message ?? '', /tool_choice "required" forces one of the built-in tools \("code_interpreter"\)/);
    // With every tool left out and nothing forced, the call goes on without tools.
    const unforced = decode({ model: 'm', input: 'hi', tools: [{ type: 'image_generation' }], tool_choice: 'auto', parallel_tool_calls: true });
    assert.equal(unforced.uncarried, undefined);
    assert.deepEqual(Object.keys(unforced.chat), ['model', 'messages']);
    assert.deepEqual(unforced.omittedTools, ['image_generation']);
  });

  test('text.format: json_schema -> response_format json_schema, json_object kept, text none; metadata and other fields dropped', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
    const { json } = decode({
      model: 'm',
      input: 'json please',
      text: { format: { type: 'json_schema', name: 'count', description: 'A count', schema, strict: true }, verbosity: 'low' },
      metadata: { a: 'b' },
      store: true,
      previous_response_id: 'resp_1',
      background: false,
      some_future_field: 1,
    });
    assert.equal(
      json,
      JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'json please' }],
        response_format: { type: 'json_schema', json_schema: { name: 'count', description: 'A count', schema, strict: true } },
      }),
    );
    const unnamed = decode({ model: 'm', input: 'x', text: { format: { type: 'json_schema', schema } } });
    assert.deepEqual(unnamed.chat['response_format'], { type: 'json_schema', json_schema: { name: 'output', schema } });
    assert.deepEqual(decode({ model: 'm', input: 'x', text: { format: { type: 'json_object' } } }).chat['response_format'], { type: 'json_object' });
    assert.equal(decode({ model: 'm', input: 'x', text: { format: { type: 'text' } } }).chat['response_format'], undefined);
    assert.equal(decode({ model: 'm', input: 'x', text: { format: { type: 'json_schema' } } }).uncarried?.param, 'text.format.schema');
  });

  test('shapes the Responses API refuses are named, never thrown', () => {
    const param = (body: unknown) => decodeResponses(body as Record<string, unknown>, compatible).uncarried?.param;
    assert.equal(param({ model: 'm', input: 7 }), 'input');
    assert.equal(param({ model: 'm', instructions: 'No input is no message.' }), undefined);
    assert.equal(param({ model: 'm', input: [7] }), 'input[0]');
    assert.equal(param({ model: 'm', input: [{ content: 'no role, no type' }] }), 'input[0]');
    assert.equal(param({ model: 'm', input: [{ role: 'tool', content: 'x' }] }), 'input[0].role');
    assert.equal(param({ model: 'm', input: [{ role: 'user', content: 7 }] }), 'input[0].content');
    assert.equal(param({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_text' }] }] }), 'input[0].content[0].text');
    assert.equal(param({ model: 'm', input: [{ type: 'function_call', call_id: 'c', name: 'n', arguments: {} }] }), 'input[0]');
    assert.equal(param({ model: 'm', input: [{ type: 'function_call_output', output: 'x' }] }), 'input[0].call_id');
    assert.equal(param({ model: 'm', input: 'x', tools: 'none' }), 'tools');
    assert.equal(param({ model: 'm', input: 'x', tools: [{ type: 'function' }] }), 'tools[0].name');
    assert.equal(param({ model: 'm', input: 'x', tools: [{ type: 'namespace', name: 'n' }] }), 'tools[0]');
    assert.equal(param({ model: 'm', input: 'x', tool_choice: 'sometimes' }), 'tool_choice');
    assert.equal(param({ model: 'm', input: 'x', instructions: ['a'] }), 'instructions');
    const notObject = decodeResponses([1, 2] as unknown as Record<string, unknown>, compatible);
    assert.equal(notObject.uncarried?.code, 'invalid_request_body');
    assert.deepEqual(notObject.chat, { model: '', messages: [] });
  });

  test('never throws on any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), fc.boolean(), (value, reasoning, isAnthropic) => {
        const decoded = decodeResponses(value as Record<string, unknown>, { ...compatible, reasoning, anthropic: isAnthropic });
        assert.equal(typeof decoded.chat.model, 'string');
        assert.ok(Array.isArray(decoded.chat.messages));
        JSON.stringify(decoded.chat);
      }),
      { numRuns: 1000 },
    );
  });

  test('never throws on random items, parts and tools, and every problem is a 400 with a param (property)', () => {
    const anything = fc.jsonValue({ maxDepth: 2 });
    const itemTypes = ['message', 'function_call', 'function_call_output', 'reasoning', 'web_search_call', 'item_reference', 'x'];
    const partTypes = ['input_text', 'output_text', 'refusal', 'input_image', 'input_file', 'x'];
    const part = fc.oneof(
      fc.record(
        { type: fc.oneof(fc.constantFrom(...partTypes), anything), text: fc.oneof(fc.string(), anything), refusal: fc.string(), image_url: fc.oneof(fc.string(), anything), file_id: fc.string(), detail: fc.string() },
        { requiredKeys: [] },
      ),
      anything,
    );
    const content = fc.oneof(fc.string(), fc.array(part, { maxLength: 4 }), anything);
    const item = fc.oneof(
      fc.record(
        {
          type: fc.oneof(fc.constantFrom(...itemTypes), anything),
          role: fc.oneof(fc.constantFrom('user', 'assistant', 'system', 'developer'), anything),
          content,
          call_id: fc.oneof(fc.string(), anything),
          name: fc.oneof(fc.string(), anything),
          namespace: fc.oneof(fc.string(), anything),
          arguments: fc.oneof(fc.string(), anything),
          output: content,
        },
        { requiredKeys: [] },
      ),
      anything,
    );
    const fnTool = fc.record({ type: fc.constant('function'), name: fc.oneof(fc.string(), anything), parameters: anything, strict: anything }, { requiredKeys: ['type'] });
    const tool = fc.oneof(
      fnTool,
      fc.record({ type: fc.constant('namespace'), name: fc.oneof(fc.string(), anything), tools: fc.oneof(fc.array(fc.oneof(fnTool, anything), { maxLength: 3 }), anything) }, { requiredKeys: ['type'] }),
      fc.record({ type: fc.constantFrom('web_search', 'file_search', 'custom', 'mcp') }),
      anything,
    );
    const body = fc.record(
      {
        model: anything,
        instructions: fc.oneof(fc.string(), anything),
        input: fc.oneof(fc.string(), fc.array(item, { maxLength: 8 }), anything),
        tools: fc.oneof(fc.array(tool, { maxLength: 4 }), anything),
        tool_choice: fc.oneof(
          fc.constantFrom('auto', 'none', 'required'),
          fc.record({ type: fc.constantFrom('function', 'allowed_tools', 'file_search', 'web_search'), name: fc.string(), mode: fc.constantFrom('auto', 'required'), tools: fc.array(anything, { maxLength: 3 }) }, { requiredKeys: ['type'] }),
          anything,
        ),
        text: fc.oneof(fc.record({ format: fc.oneof(fc.record({ type: fc.constantFrom('json_schema', 'json_object', 'text'), schema: anything, name: anything }), anything) }), anything),
        max_output_tokens: anything,
        reasoning: fc.oneof(fc.record({ effort: anything }), anything),
        stream: anything,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(body, fc.boolean(), (value, isAnthropic) => {
        const decoded = decodeResponses(value as Record<string, unknown>, { ...reasoner, anthropic: isAnthropic });
        assert.ok(Array.isArray(decoded.chat.messages));
        JSON.stringify(decoded.chat);
        if (decoded.uncarried !== undefined) {
          assert.equal(decoded.uncarried.status, 400);
          assert.ok(['unsupported_content', 'invalid_request_body'].includes(decoded.uncarried.code));
          assert.equal(typeof decoded.uncarried.param, 'string');
        }
      }),
      { numRuns: 1000 },
    );
  });

  // A quadratic pass over either list (a lookup in an array per item, say) would take minutes here; the bound is loose for a loaded machine.
  test('linear in the input: 100,000 items and a tool list of 100,000 decode in a few seconds at most', () => {
    const input: unknown[] = [];
    for (let i = 0; i < 25_000; i++) {
      input.push(
        { role: 'user', content: [{ type: 'input_text', text: `q${i}` }] },
        { type: 'function_call', call_id: `c${i}`, name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: `c${i}`, output: [{ type: 'input_image', image_url: 'https://e.com/x.png' }] },
        { type: 'reasoning', summary: [] },
      );
    }
    const tools: unknown[] = [];
    for (let i = 0; i < 50_000; i++) tools.push({ type: 'function', name: `f${i}` }, { type: `builtin_${i}` });
    const started = performance.now();
    const decoded = decodeResponses({ model: 'm', input, tools }, compatible);
    const elapsed = performance.now() - started;
    assert.equal(decoded.uncarried, undefined);
    assert.equal(decoded.droppedReasoning, 25_000);
    assert.equal(decoded.omittedTools.length, 50_000);
    assert.equal(decoded.chat.messages.length, 100_000);
    assert.ok(elapsed < 5000, `${elapsed} ms`);
  });
});
