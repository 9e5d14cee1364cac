import { textOf } from './answer.ts';
import type { AgentScript, ThinkingSigner } from './anthropic-agent.ts';

/**
 * What a real agent turn needs from the fake's Responses side (behaviour
 * `agent` and `thinking`), for clients such as the Codex CLI that drive their
 * own tools; the counterpart of anthropic-agent.ts:
 * - a scripted turn: while no function_call_output follows the last user
 *   message of `input`, the answer calls the script's function tool (when
 *   the request offers a function tool of that name) with the script's input
 *   as its arguments; once function_call_outputs follow it, the answer is
 *   text quoting them, so a test can prove the tool ran and its output
 *   travelled back;
 * - reasoning: when the request has a `reasoning` object, the output starts
 *   with a reasoning item whose summary is the thinking text (when
 *   `reasoning.summary` is set) and, with `include:
 *   ["reasoning.encrypted_content"]`, whose encrypted_content is sealed by the
 *   fake. Sent back with another encrypted_content, a reasoning item is
 *   refused with OpenAI's 400 invalid_encrypted_content: a stateless client
 *   (`store: false`) must return the item exactly as it got it.
 */

type Json = Record<string, unknown>;

/** The longest quote of function outputs the final answer carries (the quote is a slice: linear whatever the client sent). */
const QUOTE_CHARS = 4000;

const SEALED = 'fakeenc1.';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const outputText = (item: Json) => (typeof item['output'] === 'string' ? item['output'] : textOf(item['output']));

/** The text of the function_call_output items after the last user message; undefined when there are none. */
export function functionOutputsText(input: readonly unknown[]): string | undefined {
  let from = 0;
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i];
    if (isObject(item) && (item['type'] ?? 'message') === 'message' && item['role'] === 'user') {
      from = i + 1;
      break;
    }
  }
  let out: string | undefined;
  for (let i = from; i < input.length && (out?.length ?? 0) < QUOTE_CHARS; i++) {
    const item = input[i];
    if (isObject(item) && item['type'] === 'function_call_output') out = (out ?? '') + outputText(item);
  }
  return out?.slice(0, QUOTE_CHARS);
}

/** Whether the request offers a function tool named `name` (top level; Codex's shell tool `exec_command` is one). */
export function offersFunction(body: Json, name: string): boolean {
  return Array.isArray(body['tools']) && body['tools'].some((t) => isObject(t) && t['type'] === 'function' && t['name'] === name);
}

/** The script's move: a function call, the final text, or nothing (the request does not offer the function: a side request). */
export function scriptedResponse(script: AgentScript, body: Json): { call: AgentScript } | { text: string } | undefined {
  const input = Array.isArray(body['input']) ? body['input'] : [];
  const outputs = functionOutputsText(input);
  if (outputs !== undefined) return { text: `${script.answer ?? 'The tool returned:'} ${outputs}` };
  return offersFunction(body, script.tool) ? { call: script } : undefined;
}

/** A reasoning item of the answer (OpenAI's shape: id, type, summary parts, encrypted_content only when included). */
export function reasoningItem(id: string, text: string, body: Json, signer: ThinkingSigner): Json | undefined {
  const reasoning = body['reasoning'];
  if (!isObject(reasoning)) return undefined;
  const summary = typeof reasoning['summary'] === 'string' ? [{ type: 'summary_text', text }] : [];
  const item: Json = { id, type: 'reasoning', summary };
  if (Array.isArray(body['include']) && body['include'].includes('reasoning.encrypted_content')) item['encrypted_content'] = seal(text, signer);
  return item;
}

/** `fakeenc1.` + the text in base64url + `.` + the signer's signature over it: opaque to a client, checkable by the fake that made it. */
function seal(text: string, signer: ThinkingSigner): string {
  return `${SEALED}${Buffer.from(text).toString('base64url')}.${signer.sign(text)}`;
}

function opens(sealed: unknown, signer: ThinkingSigner): boolean {
  if (typeof sealed !== 'string' || !sealed.startsWith(SEALED)) return false;
  const dot = sealed.indexOf('.', SEALED.length);
  if (dot === -1) return false;
  return signer.verifies(sealed.slice(dot + 1), Buffer.from(sealed.slice(SEALED.length, dot), 'base64url').toString());
}

/** OpenAI's message for the first reasoning item of `input` whose encrypted_content this fake did not seal; undefined when all open. */
export function checkReasoning(input: readonly unknown[], signer: ThinkingSigner): string | undefined {
  for (const item of input) {
    if (!isObject(item) || item['type'] !== 'reasoning' || item['encrypted_content'] === undefined || item['encrypted_content'] === null) continue;
    if (!opens(item['encrypted_content'], signer)) return `The encrypted content for item ${String(item['id'])} could not be verified.`;
  }
  return undefined;
}
