import { invalidBody } from '../../openai-errors.ts';
import { isObject, type JsonObject } from '../json.ts';
import { contentBlocks, textBlocks } from './content.ts';

/** One Anthropic turn. */
export interface Turn {
  role: 'user' | 'assistant';
  content: JsonObject[];
}

/**
 * OpenAI messages as Anthropic's top-level `system` and its `messages`
 * (Messages API reference):
 * 1. system and developer messages, wherever they are, become the `system` text blocks, in order;
 * 2. user content becomes user blocks (content.ts);
 * 3. an assistant's text and its tool_calls become text and tool_use blocks
 *    (arguments, a JSON string, parsed into `input`);
 * 4. tool messages become tool_result blocks of a user turn;
 * 5. consecutive turns of one role are merged, as Anthropic requires
 *    alternation; parallel tool results thus share one user turn;
 * 6. in a user turn, tool_result blocks come before any other block, as
 *    Anthropic requires.
 * `ends[i]` is the last block messages[i] became (undefined for a system
 * message or one without content): where a prompt-cache breakpoint after
 * that message goes.
 */
export function translateMessages(messages: unknown[]): { system: JsonObject[]; turns: Turn[]; ends: (JsonObject | undefined)[] } {
  const system: JsonObject[] = [];
  const turns: Turn[] = [];
  const ends: (JsonObject | undefined)[] = [];
  const add = (role: Turn['role'], blocks: JsonObject[]) => {
    ends.push(blocks.at(-1));
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last !== undefined && last.role === role) {
      // A loop, not push(...blocks): a spread passes every block as an argument, and a client's hundreds of thousands
      // of content parts overflowed the stack (a RangeError, answered as an unreachable upstream).
      for (const block of blocks) last.content.push(block);
    } else turns.push({ role, content: blocks });
  };
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    const param = `messages[${i}]`;
    if (!isObject(message)) throw invalidBody(param, `${param} must be an object.`);
    const role = message['role'];
    if (role === 'system' || role === 'developer') {
      for (const block of textBlocks(message['content'], `${param}.content`)) system.push(block);
      ends.push(undefined);
    } else if (role === 'user') add('user', contentBlocks(message['content'], `${param}.content`));
    else if (role === 'assistant') add('assistant', assistantBlocks(message, param));
    else if (role === 'tool') add('user', [toolResult(message, param)]);
    else throw invalidBody(`${param}.role`, `${param}.role "${String(role)}" cannot be sent to Anthropic models.`);
  }
  for (const turn of turns) if (turn.role === 'user') resultsFirst(turn.content);
  return { system, turns, ends };
}

function assistantBlocks(message: JsonObject, param: string): JsonObject[] {
  const blocks = contentBlocks(message['content'], `${param}.content`);
  const calls = message['tool_calls'];
  if (calls === undefined || calls === null) return blocks;
  if (!Array.isArray(calls)) throw invalidBody(`${param}.tool_calls`, `${param}.tool_calls must be an array.`);
  for (let j = 0; j < calls.length; j++) blocks.push(toolUse(calls[j], `${param}.tool_calls[${j}]`));
  return blocks;
}

function toolUse(call: unknown, param: string): JsonObject {
  const fn = isObject(call) ? call['function'] : undefined;
  if (!isObject(call) || typeof call['id'] !== 'string' || !isObject(fn) || typeof fn['name'] !== 'string') {
    throw invalidBody(param, `${param} must have an id and a function with a name.`);
  }
  return { type: 'tool_use', id: call['id'], name: fn['name'], input: parseArguments(fn['arguments'], `${param}.function.arguments`) };
}

/** Tool call arguments: a JSON object in a string (empty means no arguments); Anthropic's `input` must be an object. */
function parseArguments(raw: unknown, param: string): JsonObject {
  if (raw === undefined || raw === null || raw === '') return {};
  if (isObject(raw)) return raw;
  let parsed: unknown;
  try {
    parsed = typeof raw === 'string' ? JSON.parse(raw) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!isObject(parsed)) throw invalidBody(param, `${param} must be a JSON object encoded as a string.`);
  return parsed;
}

function toolResult(message: JsonObject, param: string): JsonObject {
  const id = message['tool_call_id'];
  if (typeof id !== 'string') throw invalidBody(`${param}.tool_call_id`, `${param}.tool_call_id must be a string.`);
  const content = message['content'];
  const block: JsonObject = { type: 'tool_result', tool_use_id: id };
  if (typeof content === 'string') {
    if (content !== '') block['content'] = content;
  } else {
    const blocks = contentBlocks(content, `${param}.content`);
    if (blocks.length > 0) block['content'] = blocks;
  }
  return block;
}

/** Moves tool_result blocks ahead of the others, each group keeping its order. */
function resultsFirst(blocks: JsonObject[]): void {
  const firstOther = blocks.findIndex((block) => block['type'] !== 'tool_result');
  if (firstOther === -1 || !blocks.slice(firstOther).some((block) => block['type'] === 'tool_result')) return;
  const results = blocks.filter((block) => block['type'] === 'tool_result');
  const others = blocks.filter((block) => block['type'] !== 'tool_result');
  let at = 0;
  for (const block of results) blocks[at++] = block;
  for (const block of others) blocks[at++] = block;
}
