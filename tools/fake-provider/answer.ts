import type { Behaviour } from './behaviour.ts';
import type { Answer } from './faults.ts';
import type { StreamPlan } from './sse.ts';

/**
 * What both formats share: how an answer is derived from the request (echo
 * of the last user text, or a tool call), split into stream deltas, and
 * counted in tokens.
 */

/** What a format handler returns: a whole answer, or a stream to play. */
export type Reply = { kind: 'answer'; answer: Answer } | { kind: 'stream'; headers: Record<string, string>; plan: StreamPlan };

/** The content of the answer, before it is put in either format. */
export interface Content {
  text: string;
  /** Set when the answer is a tool call instead of text. */
  tool?: { id: string; name: string; arguments: string };
  promptTokens: number;
  completionTokens: number;
}

/** A tool the request offered: its name and JSON Schema of arguments. */
export interface OfferedTool {
  name: string;
  schema: unknown;
}

/** Text of a message's `content`: a string, or the text parts of an array (OpenAI `{type:'text'}` parts, Anthropic text blocks, and Anthropic tool_result contents). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content as Record<string, unknown>[]) {
    if (part === null || typeof part !== 'object') continue;
    if (typeof part['text'] === 'string') out += part['text'];
    else if (part['type'] === 'tool_result') out += textOf(part['content']);
  }
  return out;
}

/** Arguments that fit the tool's schema: each declared property gets a value of its type (strings get `text`). */
export function argumentsFor(schema: unknown, text: string): string {
  const properties = (schema as { properties?: Record<string, { type?: string }> } | undefined)?.properties ?? {};
  const args: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(properties)) {
    const type = prop?.type;
    args[name] = type === 'number' || type === 'integer' ? 1 : type === 'boolean' ? true : type === 'array' ? [] : type === 'object' ? {} : text;
  }
  return JSON.stringify(args);
}

/** The answer's content: a call of `tool` when given, else the behaviour's text or the echo. */
export function contentFor(behaviour: Behaviour, lastText: string, requestChars: number, tool: OfferedTool | undefined, toolId: string): Content {
  const promptTokens = behaviour.promptTokens ?? Math.max(1, Math.ceil(requestChars / 4));
  if (tool) {
    return { text: '', tool: { id: toolId, name: tool.name, arguments: argumentsFor(tool.schema, lastText) }, promptTokens, completionTokens: behaviour.completionTokens ?? 10 };
  }
  const text = behaviour.text ?? `echo: ${lastText}`;
  return { text, promptTokens, completionTokens: behaviour.completionTokens ?? wordCount(text) };
}

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length || 1;

/**
 * Splits `text` into stream deltas: into `chunks` pieces of about equal
 * length when set, else one per word (each word with the space before it).
 */
export function splitText(text: string, chunks: number | undefined): string[] {
  if (text === '') return [''];
  if (chunks === undefined) return text.match(/\s*\S+|\s+$/g) ?? [text];
  const n = Math.max(1, Math.min(chunks, text.length));
  const size = Math.ceil(text.length / n);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Tool-call arguments are streamed in `chunks` fragments, 3 by default, as providers split a JSON string anywhere. */
export const splitArguments = (json: string, chunks: number | undefined) => splitText(json, chunks ?? 3);

/** Short unique ids in each provider's style (prefix + sequence; real ids are random, nothing depends on that). */
export function idMaker(): (prefix: string) => string {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  return (prefix) => `${prefix}${run}${(++seq).toString(36).padStart(6, '0')}`;
}
