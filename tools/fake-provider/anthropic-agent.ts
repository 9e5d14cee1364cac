import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { textOf } from './answer.ts';

/**
 * What a real agent turn needs from the fake's Anthropic side (behaviour
 * `agent` and `thinking`), for clients such as Claude Code that drive their
 * own tools:
 * - a scripted turn: with no tool_result in the last user message, the
 *   answer calls the script's tool (when the request offers it) with the
 *   script's input; with tool_results there, the answer is text quoting
 *   what the tools returned, so a test can prove the tool ran and its output
 *   travelled back;
 * - signed thinking: when the request turns thinking on, the answer starts
 *   with a thinking block whose `signature` the fake can check; a thinking
 *   block that comes back with another text or signature is refused with a
 *   400, and so is a final assistant turn whose signed thinking block was
 *   dropped before its tool_use, as Anthropic refuses both.
 */

type Json = Record<string, unknown>;

/** Behaviour `agent`: the tool to call first, and the answer once its result is back. */
export interface AgentScript {
  /** The tool's name (e.g. Claude Code's `Read`); called only when the request offers a tool of that name. */
  tool: string;
  input: Json;
  /** Put before the quoted tool results in the final answer (default "The tool returned:"). */
  answer?: string;
}

/** The longest quote of tool results the final answer carries (the quote is a slice: linear whatever the client sent). */
const QUOTE_CHARS = 4000;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const blocks = (m: unknown): unknown[] => (isObject(m) && Array.isArray(m['content']) ? m['content'] : []);

/** The last message with role user (Claude Code may put role-system messages after it). */
function lastUser(messages: readonly unknown[]): unknown {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isObject(m) && m['role'] === 'user') return m;
  }
  return undefined;
}

/** The text of the tool_result blocks of the last user message; undefined when it has none. */
export function toolResultsText(messages: readonly unknown[]): string | undefined {
  const results = blocks(lastUser(messages)).filter((b) => isObject(b) && b['type'] === 'tool_result') as Json[];
  if (results.length === 0) return undefined;
  let out = '';
  for (const r of results) {
    out += textOf(r['content']);
    if (out.length >= QUOTE_CHARS) break;
  }
  return out.slice(0, QUOTE_CHARS);
}

/** Whether the request offers a tool named `name`. */
export function offers(body: Json, name: string): boolean {
  return Array.isArray(body['tools']) && body['tools'].some((t) => isObject(t) && t['name'] === name);
}

/** The script's move: a tool call, the final text, or nothing (the request does not offer the tool: a side request). */
export function scriptedTurn(script: AgentScript, body: Json): { call: AgentScript } | { text: string } | undefined {
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  const results = toolResultsText(messages);
  if (results !== undefined) return { text: `${script.answer ?? 'The tool returned:'} ${results}` };
  return offers(body, script.tool) ? { call: script } : undefined;
}

/** Thinking is on for any `thinking.type` but `disabled` (enabled, adaptive, between_tools); `display: "omitted"` hides the text (the signature still comes). */
export function thinkingAsked(body: Json): { shown: boolean } | undefined {
  const t = body['thinking'];
  if (!isObject(t) || typeof t['type'] !== 'string' || t['type'] === 'disabled') return undefined;
  return { shown: t['display'] !== 'omitted' };
}

/**
 * Signs thinking blocks with a key of its own (one per fake), as Anthropic's
 * signatures are opaque and bound to the text: `fakesig1.` + base64url of a
 * random nonce and an HMAC-SHA256 over nonce and text. It remembers which
 * tool_use ids followed a signed block (the latest 1000), to check that the
 * block comes back before them.
 */
export class ThinkingSigner {
  readonly #key = randomBytes(32);
  readonly #byToolUse = new Map<string, string>();

  sign(text: string): string {
    const nonce = randomBytes(12);
    return `fakesig1.${Buffer.concat([nonce, this.#mac(nonce, text)]).toString('base64url')}`;
  }

  /** Records that tool_use `id` was answered after the block signed `signature`. */
  followed(id: string, signature: string): void {
    this.#byToolUse.set(id, signature);
    if (this.#byToolUse.size > 1000) this.#byToolUse.delete(this.#byToolUse.keys().next().value as string);
  }

  /** Anthropic's 400 message for the first thinking block that does not verify, or for a dropped one; undefined when all is well. */
  check(messages: readonly unknown[]): string | undefined {
    let lastAssistant = -1;
    for (const [i, m] of messages.entries()) {
      if (!isObject(m) || m['role'] !== 'assistant') continue;
      lastAssistant = i;
      for (const [j, b] of blocks(m).entries()) {
        if (!isObject(b) || b['type'] !== 'thinking') continue;
        if (!this.verifies(b['signature'], b['thinking'])) return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
      }
    }
    if (lastAssistant === -1) return undefined;
    const content = blocks(messages[lastAssistant]);
    const signatures = new Set(content.map((b) => (isObject(b) && b['type'] === 'thinking' ? b['signature'] : undefined)));
    for (const b of content) {
      if (!isObject(b) || b['type'] !== 'tool_use') continue;
      const signed = this.#byToolUse.get(String(b['id']));
      if (signed !== undefined && !signatures.has(signed)) {
        return `messages.${lastAssistant}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String((content[0] as Json | undefined)?.['type'])}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
      }
    }
    return undefined;
  }

  #mac(nonce: Buffer, text: string): Buffer {
    return createHmac('sha256', this.#key).update(nonce).update(text).digest();
  }

  /** Whether `signature` is this signer's over `text`. */
  verifies(signature: unknown, text: unknown): boolean {
    if (typeof signature !== 'string' || typeof text !== 'string' || !signature.startsWith('fakesig1.')) return false;
    const raw = Buffer.from(signature.slice(9), 'base64url');
    if (raw.length !== 12 + 32) return false;
    return timingSafeEqual(raw.subarray(12), this.#mac(raw.subarray(0, 12), text));
  }
}
