import { countTokensUpTo } from '../tokens.ts';

/**
 * Where a request's prefix first reaches a number of tokens, in Anthropic's
 * prompt order: the tool definitions, then every system (and developer)
 * message (Anthropic's top-level `system`, wherever they stood), then the
 * other messages in order. Counted as src/gateway/tokens.ts counts
 * (o200k_base, 3 framing tokens per message, an image 85, tool calls and
 * tools as their JSON), but only as far as needed, since encoding runs at
 * about 7 MB/s (a whole 145 KB transcript: 20 ms):
 * - a text at least CHARS_PER_TOKEN_BOUND times as long as the tokens still
 *   missing reaches them without being encoded: prose and code run 3 to 4.5
 *   characters a token; only runs such as long lines of '=' compress more,
 *   and a breakpoint the provider finds short is ignored, never refused;
 * - any other text is encoded up to the tokens still missing
 *   (countTokensUpTo stops soon after them, in time linear in the text).
 * So a long system prompt costs nothing and the worst case is encoding about
 * `minimum` tokens (measured on the sample corpus: 0.05 to 0.2 ms a plan
 * for 1024, 0.3 to 2.5 ms for 4096).
 */

/** Where the prefix reached the minimum: TOOLS, SYSTEM, or the index in `messages` of the message that did; undefined: never. */
export type Reach = number | undefined;
export const TOOLS = -2;
export const SYSTEM = -1;

const PER_MESSAGE = 3;
const IMAGE_TOKENS = 85;
const CHARS_PER_TOKEN_BOUND = 6;

export const isSystemRole = (role: unknown) => role === 'system' || role === 'developer';

/** Counts texts against a budget of tokens; once spent, `done` is true and counting stops. */
class Budget {
  left: number;
  constructor(tokens: number) {
    this.left = tokens;
  }
  get done(): boolean {
    return this.left <= 0;
  }
  text(text: string): void {
    if (this.done || text.length === 0) return;
    if (text.length >= this.left * CHARS_PER_TOKEN_BOUND) {
      this.left = 0;
      return;
    }
    // Past the budget, the exact figure does not matter: stop encoding there.
    const count = countTokensUpTo(text, this.left);
    this.left = count > this.left ? 0 : this.left - count;
  }
  add(tokens: number): void {
    this.left -= tokens;
  }
  message(message: unknown): void {
    this.add(PER_MESSAGE);
    if (typeof message !== 'object' || message === null) return;
    const m = message as Record<string, unknown>;
    const content = m['content'];
    if (typeof content === 'string') this.text(content);
    else if (Array.isArray(content)) {
      for (const part of content) {
        if (this.done) return;
        if (typeof part !== 'object' || part === null) continue;
        const p = part as Record<string, unknown>;
        if (typeof p['text'] === 'string') this.text(p['text']);
        else if (p['type'] === 'image_url') this.add(IMAGE_TOKENS);
        else this.text(JSON.stringify(p));
      }
    }
    if (typeof m['name'] === 'string') this.text(m['name']);
    if (m['tool_calls'] !== undefined) this.text(JSON.stringify(m['tool_calls']));
  }
}

/** Where the prefix of tools + system + messages first holds `minimum` tokens. */
export function prefixReach(messages: readonly unknown[], tools: unknown, minimum: number): Reach {
  const budget = new Budget(minimum);
  if (Array.isArray(tools) && tools.length > 0) budget.text(JSON.stringify(tools));
  if (budget.done) return TOOLS;
  for (const message of messages) if (isSystemRole((message as { role?: unknown } | null)?.role)) budget.message(message);
  if (budget.done) return SYSTEM;
  for (let i = 0; i < messages.length; i++) {
    if (isSystemRole((messages[i] as { role?: unknown } | null)?.role)) continue;
    budget.message(messages[i]);
    if (budget.done) return i;
  }
  return undefined;
}
