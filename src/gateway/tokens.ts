import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * Token counts for what the gateway decides on its own (compaction budgets
 * and savings, context-window fits, budget estimates). OpenAI's current
 * models use o200k_base, so counts for them are exact for text. No public
 * tokenizer exists for Anthropic, Mistral, Llama or DeepSeek models: for
 * those the same o200k count is the documented approximation (within about
 * 10 to 20% on English and code); the provider's reported usage, not this
 * count, is what a call is priced from.
 */
export function countTokens(text: string): number {
  return text.length === 0 ? 0 : countO200k(text);
}

/** Per-message framing OpenAI adds to a chat prompt (role and separators), as its cookbook counts it. */
const PER_MESSAGE = 3;
const PER_REPLY = 3;

/**
 * The prompt tokens of a chat request's messages (and tool definitions, as
 * their JSON): text parts counted with the tokenizer, image parts as a flat
 * 85 tokens (OpenAI's low-detail price), framing per message.
 */
export function countPromptTokens(messages: readonly unknown[], tools?: unknown, count: (text: string) => number = countTokens): number {
  let total = PER_REPLY;
  for (const message of messages) {
    total += PER_MESSAGE;
    if (typeof message !== 'object' || message === null) continue;
    const m = message as Record<string, unknown>;
    total += countContent(m.content, count);
    if (typeof m.name === 'string') total += count(m.name);
    if (m.tool_calls !== undefined) total += count(JSON.stringify(m.tool_calls));
  }
  if (tools !== undefined && tools !== null) total += count(JSON.stringify(tools));
  return total;
}

/**
 * countPromptTokens without the tokenizer: each text's length over 3, which
 * leans high (o200k averages about 4 characters a token on English prose and
 * about 3 on code and JSON). Linear and cheap where tokenizing costs about
 * 22 ms per MB on the event loop: for what an estimate serves, budget
 * reservations, which are settled with the provider's own count.
 */
export function estimatePromptTokens(messages: readonly unknown[], tools?: unknown): number {
  return countPromptTokens(messages, tools, (text) => Math.ceil(text.length / 3));
}

function countContent(content: unknown, count: (text: string) => number): number {
  if (typeof content === 'string') return count(content);
  if (!Array.isArray(content)) return 0;
  let total = 0;
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const p = part as Record<string, unknown>;
    if (typeof p.text === 'string') total += count(p.text);
    else if (p.type === 'image_url') total += 85;
    else total += count(JSON.stringify(p));
  }
  return total;
}
