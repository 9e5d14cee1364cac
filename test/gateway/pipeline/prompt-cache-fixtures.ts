import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import type OpenAI from 'openai';

/** What the prompt-cache tests share: long texts of a known size, the usage record of a call. */

/** About `tokens` o200k tokens of text, starting with `seed` (two seeds differ from their first token). */
export function text(seed: string, tokens: number): string {
  const words: string[] = [];
  for (let i = 0; countTokens(words.join(' ')) < tokens; i++) words.push(`${seed}${i}`, 'alpha', 'beta', 'gamma', 'delta');
  return words.join(' ');
}

const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'read', arguments: '{"path":"a.ts"}' } });

/** An agent loop: a long system prompt (1,500 tokens), the task, two tool rounds, the newest tool results last. */
export const agentLoop = (): OpenAI.ChatCompletionMessageParam[] => [
  { role: 'system', content: text('sys', 1500) },
  { role: 'user', content: 'fix the bug' },
  { role: 'assistant', content: null, tool_calls: [call('c1')] },
  { role: 'tool', tool_call_id: 'c1', content: 'file one' },
  { role: 'assistant', content: null, tool_calls: [call('c2'), call('c3')] },
  { role: 'tool', tool_call_id: 'c2', content: 'file two' },
  { role: 'tool', tool_call_id: 'c3', content: 'file three' },
];

/** Every cache_control in a body sent to Anthropic, as paths (tools.1, system.0, messages.2.1, messages.2.0.content.0). */
// biome-ignore lint/suspicious/noExplicitAny: walks the sent body
export function cacheControlPaths(body: any): string[] {
  const out: string[] = [];
  const visit = (block: { cache_control?: unknown; content?: unknown }, path: string) => {
    if (block.cache_control) out.push(path);
    if (Array.isArray(block.content)) {
      block.content.forEach((inner, k) => {
        visit(inner, `${path}.content.${k}`);
      });
    }
  };
  body.tools?.forEach((t: object, i: number) => {
    visit(t, `tools.${i}`);
  });
  if (Array.isArray(body.system)) {
    body.system.forEach((b: object, i: number) => {
      visit(b, `system.${i}`);
    });
  }
  body.messages.forEach((m: { content: object[] | string }, i: number) => {
    if (Array.isArray(m.content)) {
      m.content.forEach((b, j) => {
        visit(b, `messages.${i}.${j}`);
      });
    }
  });
  return out;
}

export { usageRecord } from '../../helpers/gateway-service.ts';
