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
  let lastUser: unknown = '';
  for (const message of messages) {
    tokenBound += PER_MESSAGE;
    if (typeof message !== 'object' || message === null) continue;
    const m = message as Record<string, unknown>;
    const size = measure(m.content);
    chars += size.chars;
    tokenBound += size.bytes + size.images * IMAGE_TOKENS;
    images += size.images;
    if (m.role === 'tool' || m.role === 'function' || Array.isArray(m.tool_calls)) {
      toolTurns++;
      if (m.tool_calls !== undefined) tokenBound += Buffer.byteLength(JSON.stringify(m.tool_calls));
    }
    if ((m.role === 'system' || m.role === 'developer') && system.length < SCAN_SYSTEM) system += head(m.content, SCAN_SYSTEM - system.length);
    else if (m.role === 'user') lastUser = m.content;
  }
  const ask = head(lastUser, SCAN_USER);
  const askWords = wordCount(ask);
  const last = messages.at(-1) as Record<string, unknown> | undefined;
  const lastText = last && last.role !== 'user' && last.role !== 'system' ? head(last.content, SCAN_LAST) : '';
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
    scanText: `${system}\n${ask}\n${lastText}`,
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

/** Sizes of one message's content, written into one reused object (no allocation per message). */
const sizes = { chars: 0, bytes: 0, images: 0 };

/** A message's content: a string, or parts (text parts read, image parts counted, others measured as JSON). */
function measure(content: unknown): typeof sizes {
  sizes.chars = 0;
  sizes.bytes = 0;
  sizes.images = 0;
  if (typeof content === 'string') {
    sizes.chars = content.length;
    sizes.bytes = Buffer.byteLength(content);
  } else if (Array.isArray(content)) {
    for (const part of content) {
      if (typeof part !== 'object' || part === null) continue;
      const p = part as Record<string, unknown>;
      if (typeof p.text === 'string') {
        sizes.chars += p.text.length;
        sizes.bytes += Buffer.byteLength(p.text);
      } else if (p.type === 'image_url' || p.type === 'image') sizes.images++;
      else sizes.bytes += Buffer.byteLength(JSON.stringify(p));
    }
  }
  return sizes;
}

/** The first `n` characters of a message's text (text parts joined by newlines). */
function head(content: unknown, n: number): string {
  if (typeof content === 'string') return content.length <= n ? content : content.slice(0, n);
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) {
    const text = (part as { text?: unknown } | null)?.text;
    if (typeof text !== 'string') continue;
    out += out ? `\n${text}` : text;
    if (out.length >= n) return out.slice(0, n);
  }
  return out;
}
