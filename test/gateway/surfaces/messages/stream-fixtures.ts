import { openAiCompatibleAdapter } from '../../../../src/gateway/providers/openai-compatible/index.ts';
import type { CallContext } from '../../../../src/gateway/providers/types.ts';
import { MessagesFromChat } from '../../../../src/gateway/surfaces/messages/stream-from-chat.ts';

/** One answer (reasoning, text, two parallel tool calls), as an OpenAI-compatible provider streams it and as it answers it whole. */

const ctx: CallContext = { model: 'gpt-4.1', apiKey: 'sk-test', baseUrl: new URL('https://api.openai.com/v1'), requestId: 'req1', created: 1_750_000_000 };

const head = '{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4.1-2025-04-14",';
const chunk = (delta: string, finish = 'null') => `${head}"choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}]}`;

export const CHUNKS = [
  chunk('{"role":"assistant","content":"","refusal":null}'),
  chunk('{"reasoning_content":"Two "}'),
  chunk('{"reasoning_content":"reads."}'),
  chunk('{"content":"Reading"}'),
  chunk('{"content":" both. ü 🌍"}'),
  chunk('{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Read","arguments":""}}]}'),
  chunk('{"tool_calls":[{"index":0,"function":{"arguments":"{\\"file_path\\":"}}]}'),
  chunk('{"tool_calls":[{"index":0,"function":{"arguments":"\\"a.txt\\"}"}}]}'),
  chunk('{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"Read","arguments":"{\\"file_path\\":\\"b.txt\\"}"}}]}'),
  chunk('{}', '"tool_calls"'),
  `${head}"choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":12}}}`,
];

/** The whole stream as the provider sends it. */
export const RECORDED = Buffer.from(`${CHUNKS.map((c) => `data: ${c}\n\n`).join('')}data: [DONE]\n\n`);

/** The same answer, not streamed. */
export const COMPLETION = JSON.stringify({
  id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
  object: 'chat.completion',
  created: 1741570283,
  model: 'gpt-4.1-2025-04-14',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Reading both. ü 🌍',
        reasoning_content: 'Two reads.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'Read', arguments: '{"file_path":"a.txt"}' } },
          { id: 'call_b', type: 'function', function: { name: 'Read', arguments: '{"file_path":"b.txt"}' } },
        ],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 1200, completion_tokens: 40, total_tokens: 1240, prompt_tokens_details: { cached_tokens: 1024 } },
});

/** A MessagesFromChat around the real OpenAI-compatible adapter's stream, as the surface creates it. */
export function translator(): MessagesFromChat {
  const inner = openAiCompatibleAdapter({ name: 'OpenAI' }).chatStream(ctx, { includeUsage: true, cost: () => undefined });
  return new MessagesFromChat(inner, { requestId: 'req1', model: 'gpt-4.1', provider: 'OpenAI' });
}

/** One Anthropic SSE event as the translator writes it. */
export const ev = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
