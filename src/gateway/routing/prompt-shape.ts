import type { ChatRequest } from '../providers/types.ts';

/**
 * What routing reads off a chat request, in one pass over its messages:
 * sizes for the classifier and for context-window fits, what a model must
 * accept (images, JSON output, several choices), and the slices of text the
 * classifier scans (bounded, so a 1 MB transcript costs what a 10 KB one does).
 */
export interface PromptShape {
  messages: number;
  /** Characters of text content, every message. */
  chars: number;
  /**
   * UTF-8 bytes of text content plus framing: an upper bound of the prompt's
   * tokens (a byte-level BPE token covers at least one byte), so a request
   * under a model's window by this bound needs no tokenizer run.
   */
  tokenBound: number;
  images: number;
  /** Tool definitions offered. */
  tools: number;
  /** Tool calls and tool results already in the conversation (an agent loop in progress). */
  toolTurns: number;
  /** Characters of a `json_schema` response format's schema; 0 without one. */
  schemaSize: number;
  /** `response_format` asks for JSON (a schema or json_object). */
  jsonOutput: boolean;
  /** Several choices asked for (`n` > 1). */
  choices: number;
  /** `max_completion_tokens`, else `max_tokens`; undefined when the client set neither. */
  maxOutput: number | undefined;
  effort: string | undefined;
  /** Words of the last user message (the instruction, with whatever was pasted into it). */
  askWords: number;
  /** The system prompt's start, the last user message's start and the last message's (a tool result) start. */
  scanText: string;
}

const SCAN_SYSTEM = 2000;
const SCAN_USER = 8000;
const SCAN_LAST = 2000;
/** Framing per message and per reply, as tokens.ts counts it; an image part as its flat 85 tokens. */
const PER_MESSAGE = 3;
const IMAGE_TOKENS = 85;

export function promptShape(body: ChatRequest): PromptShape {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let chars = 0;
  let tokenBound = 3;
  let images = 0;
  let toolTurns = 0;
  let system = '';
  let lastUser = '';
  let askWords = 0;
  for (const message of messages) {
    tokenBound += PER_MESSAGE;
    if (typeof message !== 'object' || message === null) continue;
    const m = message as Record<string, unknown>;
    const text = textOf(m.content);
    chars += text.chars;
    tokenBound += text.bytes + text.images * IMAGE_TOKENS;
    images += text.images;
    if (m.role === 'tool' || m.role === 'function' || Array.isArray(m.tool_calls)) {
      toolTurns++;
      if (m.tool_calls !== undefined) tokenBound += Buffer.byteLength(JSON.stringify(m.tool_calls));
    }
    if ((m.role === 'system' || m.role === 'developer') && system.length < SCAN_SYSTEM) system += text.head(SCAN_SYSTEM - system.length);
    else if (m.role === 'user') {
      lastUser = text.head(SCAN_USER);
      askWords = wordCount(lastUser);
    }
  }
  const last = messages.at(-1) as Record<string, unknown> | undefined;
  const lastText = last && last.role !== 'user' && last.role !== 'system' ? textOf(last.content).head(SCAN_LAST) : '';
  const tools = Array.isArray(body['tools']) ? (body['tools'] as unknown[]).length : 0;
  if (tools > 0) tokenBound += Buffer.byteLength(JSON.stringify(body['tools']));
  const format = body['response_format'] as { type?: unknown; json_schema?: { schema?: unknown } } | null | undefined;
  const schemaSize = format?.type === 'json_schema' ? Math.max(1, JSON.stringify(format.json_schema?.schema ?? {}).length) : 0;
  const maxOutput = positive(body['max_completion_tokens']) ?? positive(body['max_tokens']);
  const effort = typeof body['reasoning_effort'] === 'string' ? body['reasoning_effort'] : undefined;
  return {
    messages: messages.length,
    chars,
    tokenBound,
    images,
    tools,
    toolTurns,
    schemaSize,
    jsonOutput: format?.type === 'json_schema' || format?.type === 'json_object',
    choices: typeof body['n'] === 'number' ? body['n'] : 1,
    maxOutput,
    effort,
    askWords,
    scanText: `${system}\n${lastUser}\n${lastText}`,
  };
}

function wordCount(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = text.charCodeAt(i) <= 32;
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

const positive = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);

interface Text {
  chars: number;
  bytes: number;
  images: number;
  head(n: number): string;
}

const EMPTY: Text = { chars: 0, bytes: 0, images: 0, head: () => '' };

/** A message's content: a string, or parts (text parts read, image parts counted, others measured as JSON). */
function textOf(content: unknown): Text {
  if (typeof content === 'string') {
    return { chars: content.length, bytes: Buffer.byteLength(content), images: 0, head: (n) => content.slice(0, n) };
  }
  if (!Array.isArray(content)) return EMPTY;
  let chars = 0;
  let bytes = 0;
  let images = 0;
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part !== 'object' || part === null) continue;
    const p = part as Record<string, unknown>;
    if (typeof p.text === 'string') {
      chars += p.text.length;
      bytes += Buffer.byteLength(p.text);
      texts.push(p.text);
    } else if (p.type === 'image_url' || p.type === 'image') images++;
    else bytes += Buffer.byteLength(JSON.stringify(p));
  }
  return { chars, bytes, images, head: (n) => texts.join('\n').slice(0, n) };
}
