import { openAiCompatibleAdapter } from '../../../../src/gateway/providers/openai-compatible/index.ts';
import type { CallContext } from '../../../../src/gateway/providers/types.ts';
import type { ResponseContext } from '../../../../src/gateway/surfaces/responses/from-chat.ts';
import { ResponsesFromChat } from '../../../../src/gateway/surfaces/responses/stream-from-chat.ts';

/**
 * One answer (reasoning, text, a call of a namespaced function and a plain
 * one in parallel), as an OpenAI-compatible provider streams it and as it
 * answers it whole, and the Responses request it answers.
 */

const callCtx: CallContext = { model: 'deepseek-chat', apiKey: 'sk-test', baseUrl: new URL('https://api.deepseek.com/v1'), requestId: 'req1', created: 1_750_000_000 };

/** What the client sent (echoed by the response object). */
export const REQUEST = {
  model: 'deepseek/deepseek-chat',
  instructions: 'Be brief.',
  input: 'Read a.txt and b.txt',
  tools: [
    { type: 'function', name: 'Read', parameters: { type: 'object', properties: { file_path: { type: 'string' } } } },
    { type: 'namespace', name: 'fs', description: 'Files', tools: [{ type: 'function', name: 'stat' }] },
  ],
  reasoning: { summary: 'auto' },
  max_output_tokens: 2048,
  metadata: { run: '7' },
  stream: true,
};

export const CTX: ResponseContext = {
  id: 'resp_0a1b2c',
  createdAt: 1_750_000_123,
  model: 'deepseek/deepseek-chat',
  request: REQUEST,
  toolNames: new Map([['fs__stat', { name: 'stat', namespace: 'fs' }]]),
  provider: 'DeepSeek',
};

/** The usage chunk's cost: what the gateway's pricing puts in it. */
export const COST = 0.00042;

const head = '{"id":"chatcmpl-9f","object":"chat.completion.chunk","created":1741570283,"model":"deepseek-chat",';
const chunk = (delta: string, finish = 'null') => `${head}"choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}]}`;

export const CHUNKS = [
  chunk('{"role":"assistant","content":""}'),
  chunk('{"reasoning_content":"Two "}'),
  chunk('{"reasoning_content":"reads."}'),
  chunk('{"content":"Reading"}'),
  chunk('{"content":" both. ü 🌍"}'),
  chunk('{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"fs__stat","arguments":""}}]}'),
  chunk('{"tool_calls":[{"index":0,"function":{"arguments":"{\\"path\\":"}}]}'),
  chunk('{"tool_calls":[{"index":0,"function":{"arguments":"\\"a.txt\\"}"}}]}'),
  chunk('{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"Read","arguments":"{\\"file_path\\":\\"b.txt\\"}"}}]}'),
  chunk('{}', '"tool_calls"'),
  `${head}"choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":12}}}`,
];

/** The whole stream as the provider sends it. */
export const RECORDED = Buffer.from(`${CHUNKS.map((c) => `data: ${c}\n\n`).join('')}data: [DONE]\n\n`);

/** The same answer, not streamed, with the cost the gateway adds to its usage. */
export const COMPLETION = {
  id: 'chatcmpl-9f',
  object: 'chat.completion',
  created: 1741570283,
  model: 'deepseek-chat',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Reading both. ü 🌍',
        reasoning_content: 'Two reads.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'fs__stat', arguments: '{"path":"a.txt"}' } },
          { id: 'call_b', type: 'function', function: { name: 'Read', arguments: '{"file_path":"b.txt"}' } },
        ],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: {
    prompt_tokens: 1200,
    completion_tokens: 40,
    total_tokens: 1240,
    prompt_tokens_details: { cached_tokens: 1024 },
    completion_tokens_details: { reasoning_tokens: 12 },
    cost: COST,
  },
};

/** The response object for that answer: what both the whole and the streamed translation must give. */
export const EXPECTED_RESPONSE = {
  id: 'resp_0a1b2c',
  object: 'response',
  created_at: 1_750_000_123,
  status: 'completed',
  error: null,
  incomplete_details: null,
  instructions: 'Be brief.',
  max_output_tokens: 2048,
  model: 'deepseek-chat',
  output: [
    { id: 'rs_0a1b2c0000', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Two reads.' }] },
    {
      id: 'msg_0a1b2c0001',
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Reading both. ü 🌍', annotations: [], logprobs: [] }],
    },
    { id: 'fc_0a1b2c0002', type: 'function_call', status: 'completed', call_id: 'call_a', name: 'stat', namespace: 'fs', arguments: '{"path":"a.txt"}' },
    { id: 'fc_0a1b2c0003', type: 'function_call', status: 'completed', call_id: 'call_b', name: 'Read', arguments: '{"file_path":"b.txt"}' },
  ],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: null, summary: 'auto' },
  store: true,
  temperature: 1,
  text: { format: { type: 'text' } },
  tool_choice: 'auto',
  tools: REQUEST.tools,
  top_p: 1,
  truncation: 'disabled',
  usage: {
    input_tokens: 1200,
    input_tokens_details: { cached_tokens: 1024 },
    output_tokens: 40,
    output_tokens_details: { reasoning_tokens: 12 },
    total_tokens: 1240,
    cost: COST,
  },
  user: null,
  metadata: { run: '7' },
};

/** A ResponsesFromChat around the real OpenAI-compatible adapter's stream, as the surface creates it. */
export function translator(ctx: ResponseContext = CTX): ResponsesFromChat {
  const inner = openAiCompatibleAdapter({ name: 'DeepSeek' }).chatStream(callCtx, { includeUsage: true, cost: () => COST });
  return new ResponsesFromChat(inner, ctx);
}

/** Each SSE event of a Responses stream as {event, data}, in order. */
export function parseEvents(sse: string): { event: string; data: Record<string, unknown> }[] {
  const events: { event: string; data: Record<string, unknown> }[] = [];
  for (const block of sse.split('\n\n')) {
    if (block === '') continue;
    const lines = block.split('\n');
    const event = lines[0]!.startsWith('event: ') ? lines[0]!.slice('event: '.length) : '';
    const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice('data: '.length));
    events.push({ event, data: JSON.parse(data.join('\n')) });
  }
  return events;
}
