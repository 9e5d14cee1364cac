import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

/** What the prompt-cache tests share: long texts of a known size, the usage record of a call. */

/** About `tokens` o200k tokens of text, starting with `seed` (two seeds differ from their first token). */
export function text(seed: string, tokens: number): string {
  const words: string[] = [];
  for (let i = 0; countTokens(words.join(' ')) < tokens; i++) words.push(`${seed}${i}`, 'alpha', 'beta', 'gamma', 'delta');
  return words.join(' ');
}

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
