import { isObject, type JsonObject } from '../../providers/json.ts';
import type { ChatRequest } from '../../providers/types.ts';
import { decodeMessages } from './to-chat.ts';
import { toolCall, userPart } from './to-chat-messages.ts';
import { FirstProblem } from './uncarried.ts';

/** `ChatOrigin.message` of the top-level `system`. */
export const TOP_SYSTEM = -1;

/** Where one chat message of the stages form came from in the client's Messages body. */
export interface ChatOrigin {
  /** The Anthropic message: an index of the body's `messages`, or TOP_SYSTEM. */
  message: number;
  /**
   * Part by part, the block each content part came from: an index of that
   * message's content (of the tool_result's own content, for a tool
   * message); -1 for a part made from a string. Empty when the chat
   * content is a string.
   */
  parts: number[];
  /** An assistant's tool_calls: the tool_use blocks, in order. */
  calls: number[];
  /** A tool message: its tool_result block; -1 otherwise. */
  result: number;
  /** The last block of the Anthropic message this chat message covers (where a breakpoint after it goes); -1: none. */
  end: number;
  /**
   * Blocks the form leaves out sit inside what this chat message covers (a
   * tool result holding block types it does not carry): its content cannot
   * be replaced without losing them.
   */
  opaque: boolean;
}

/** The stages' view of a Messages request and, for each of its messages, where it came from. */
export interface StagesForm {
  chat: ChatRequest;
  origin: ChatOrigin[];
}

type Out = { messages: JsonObject[]; origin: ChatOrigin[] };

const ORIGIN = (message: number): ChatOrigin => ({ message, parts: [], calls: [], result: -1, end: -1, opaque: false });

/**
 * A Messages request (the client's body) as the Chat Completions request the
 * pipeline's stages read, keeping what they need to act on it and to write
 * their changes back (compacted.ts, breakpoints.ts):
 * - one content part per Anthropic block (text, image, document as
 *   to-chat-messages.ts maps them), never joined, each with the client's
 *   `cache_control` where it put one: on parts, system parts and tools, as
 *   a Chat Completions request bound to Anthropic carries them (what the
 *   savings profile and the prompt-cache planner read);
 * - tool_use -> tool_calls and tool_result -> one tool message each, ahead
 *   of the rest of the user turn, as to-chat.ts does; a tool message's
 *   content is its blocks as parts (images included, where Chat Completions
 *   would move them to a user message: here they stay with the result they
 *   belong to), the tool_result's own cache_control on its last part;
 * - thinking and redacted_thinking blocks, and block types Chat Completions
 *   has no part for, are left out; an assistant message left with nothing
 *   gives no chat message;
 * - every field other than system, messages and tools as to-chat.ts decodes it.
 * `origin[i]` says which message and blocks chat message i came from.
 * Never throws; linear in the body (one pass over messages and blocks).
 */
export function stagesForm(body: JsonObject): StagesForm {
  const { chat } = decodeMessages({ ...body, system: undefined, messages: [] }, { reasoning: false, maxTokensField: 'max_tokens' });
  const out: Out = { messages: [], origin: [] };
  const system = body['system'];
  if (system !== undefined && system !== null) systemMessage(system, TOP_SYSTEM, out);
  const messages = body['messages'];
  if (Array.isArray(messages)) {
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      if (!isObject(message)) continue;
      const role = message['role'];
      if (role === 'user') userMessages(message['content'], i, out);
      else if (role === 'assistant') {
        const decoded = assistantMessage(message, i);
        if (decoded) push(out, decoded.message, decoded.origin);
      } else if (role === 'system') systemMessage(message['content'], i, out);
    }
  }
  chat.messages = out.messages;
  markTools(chat, body['tools']);
  return { chat, origin: out.origin };
}

function push(out: Out, message: JsonObject, origin: ChatOrigin): void {
  out.messages.push(message);
  out.origin.push(origin);
}

const problems = () => new FirstProblem();

/** The part a block becomes (undefined: none), with the block's cache_control. */
function partOf(block: unknown): JsonObject | undefined {
  if (!isObject(block)) return undefined;
  const type = block['type'];
  if (type !== 'text' && type !== 'image' && type !== 'document') return undefined;
  const part = userPart(block, () => '', problems());
  if (part !== undefined && isObject(block['cache_control'])) part['cache_control'] = block['cache_control'];
  return part;
}

function systemMessage(content: unknown, message: number, out: Out): void {
  const origin = ORIGIN(message);
  if (typeof content === 'string') {
    origin.end = 0;
    push(out, { role: 'system', content }, origin);
    return;
  }
  if (!Array.isArray(content)) return;
  const parts: JsonObject[] = [];
  for (let j = 0; j < content.length; j++) {
    const block = content[j];
    if (!isObject(block) || block['type'] !== 'text' || typeof block['text'] !== 'string') continue;
    parts.push(partOf(block)!);
    origin.parts.push(j);
    origin.end = j;
  }
  push(out, { role: 'system', content: parts }, origin);
}

/** A user turn: a tool message per tool_result, then one user message with the rest (if any). */
function userMessages(content: unknown, i: number, out: Out): void {
  if (typeof content === 'string') {
    push(out, { role: 'user', content }, { ...ORIGIN(i), end: 0 });
    return;
  }
  if (!Array.isArray(content)) return;
  const parts: JsonObject[] = [];
  const origin = ORIGIN(i);
  let sawResult = false;
  for (let j = 0; j < content.length; j++) {
    const block = content[j];
    if (isObject(block) && block['type'] === 'tool_result') {
      sawResult = true;
      const tool = toolMessage(block, i, j);
      push(out, tool.message, tool.origin);
      continue;
    }
    const part = partOf(block);
    if (part === undefined) continue;
    parts.push(part);
    origin.parts.push(j);
    origin.end = j;
  }
  if (parts.length === 0 && sawResult) return;
  push(out, { role: 'user', content: parts.length === 0 ? '' : parts }, origin);
}

/** One tool_result block (block j of message i) as a tool message. */
export function toolMessage(block: JsonObject, i: number, j: number): { message: JsonObject; origin: ChatOrigin } {
  const id = block['tool_use_id'];
  const origin: ChatOrigin = { ...ORIGIN(i), result: j, end: j };
  const content = block['content'];
  const mark = isObject(block['cache_control']) ? block['cache_control'] : undefined;
  let chatContent: unknown;
  if (Array.isArray(content)) {
    const parts: JsonObject[] = [];
    for (let k = 0; k < content.length; k++) {
      const part = partOf(content[k]);
      if (part === undefined) {
        origin.opaque = true;
        continue;
      }
      parts.push(part);
      origin.parts.push(k);
    }
    chatContent = parts;
  } else if (typeof content === 'string' || content === undefined || content === null) {
    const text = typeof content === 'string' ? content : '';
    chatContent = mark ? [{ type: 'text', text }] : text;
    if (mark) origin.parts.push(-1);
  } else {
    origin.opaque = true;
    chatContent = '';
  }
  if (mark && Array.isArray(chatContent)) {
    // The result's own breakpoint, where the stages look for it: on its last part (one made when it has none).
    const parts = chatContent as JsonObject[];
    if (parts.length === 0) {
      parts.push({ type: 'text', text: '' });
      origin.parts.push(-1);
    }
    parts[parts.length - 1] = { ...parts[parts.length - 1], cache_control: mark };
  }
  return { message: { role: 'tool', tool_call_id: typeof id === 'string' ? id : '', content: chatContent as JsonObject[] | string }, origin };
}

/** An assistant message: text blocks as parts, tool_use blocks as tool_calls; undefined when it has neither. */
export function assistantMessage(message: JsonObject, i: number): { message: JsonObject; origin: ChatOrigin } | undefined {
  const content = message['content'];
  const origin = ORIGIN(i);
  if (typeof content === 'string') return { message: { role: 'assistant', content }, origin: { ...origin, end: 0 } };
  if (!Array.isArray(content)) return undefined;
  const parts: JsonObject[] = [];
  const calls: JsonObject[] = [];
  for (let j = 0; j < content.length; j++) {
    const block = content[j];
    if (!isObject(block)) continue;
    if (block['type'] === 'text' && typeof block['text'] === 'string') {
      parts.push(partOf(block)!);
      origin.parts.push(j);
      origin.end = j;
    } else if (block['type'] === 'tool_use') {
      const call = toolCall(block, '', problems());
      if (call === undefined) continue;
      calls.push(call);
      origin.calls.push(j);
      origin.end = j;
    }
  }
  if (parts.length === 0 && calls.length === 0) return undefined;
  const out: JsonObject = { role: 'assistant', content: parts.length > 0 ? parts : null };
  if (calls.length > 0) out['tool_calls'] = calls;
  return { message: out, origin };
}

/**
 * The client's cache_control on the function tools to-chat.ts made (in the
 * same order: the custom tools with a name). A mark on a tool left out (a
 * server tool) goes on the last function tool unless one after it is
 * marked: the stages read one mark at the end of the tool definitions.
 */
function markTools(chat: ChatRequest, tools: unknown): void {
  const functions = chat['tools'];
  if (!Array.isArray(tools) || !Array.isArray(functions)) return;
  let at = 0;
  let pending = false;
  for (const tool of tools) {
    if (!isObject(tool)) continue;
    const type = tool['type'];
    const kept = (type === undefined || type === null || type === 'custom') && typeof tool['name'] === 'string';
    const mark = isObject(tool['cache_control']) ? tool['cache_control'] : undefined;
    if (!kept) {
      if (mark) pending = true;
      continue;
    }
    const fn = functions[at++] as JsonObject | undefined;
    if (fn && mark) {
      fn['cache_control'] = mark;
      pending = false;
    }
  }
  const last = functions.at(-1) as JsonObject | undefined;
  if (pending && last && !isObject(last['cache_control'])) last['cache_control'] = { type: 'ephemeral' };
}
