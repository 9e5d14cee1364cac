import { isObject, type JsonObject } from '../../providers/json.ts';
import { describe } from '../messages/to-chat-messages.ts';
import type { FirstProblem } from '../messages/uncarried.ts';
import { chatToolName } from './tool-names.ts';
import { NOT_CARRIED } from './uncarried.ts';

export interface DecodedInput {
  messages: JsonObject[];
  /** Reasoning items left out. */
  droppedReasoning: number;
  /**
   * For each message, the input items it was made from, by index, in order
   * (-1: `instructions`; a string input is item 0): items left out
   * (reasoning, web search history) belong to the assistant turn they sit
   * in, else to the message after them; what follows the last message
   * belongs to it. What compaction's changes are written back into (compacted.ts).
   */
  groups: number[][];
}

/**
 * Responses `instructions` and `input` (API reference, "Create a model
 * response": input items) as Chat Completions messages. What to-chat.ts's
 * module comment promises, here:
 * - instructions -> a leading system message; input as a string -> one
 *   user message (none given: no message, as OpenAI allows);
 * - message items (`type: "message"`, or no type and a role): user -> user,
 *   system and developer -> system (Codex sends its system prompt as
 *   developer messages), assistant -> assistant; content a string or parts:
 *   input_text, output_text and refusal as text, input_image with an
 *   image_url (a URL or a data: URL) as an image part; one text part is sent
 *   as a string, more parts as an array. An image given by file_id, and
 *   input_file parts, are the problem naming them (the file lives at OpenAI);
 *   so is an image in a system or assistant message, which Chat has no place for;
 * - function_call {call_id, name, namespace, arguments} -> a tool call;
 *   consecutive assistant-side items (assistant messages, function calls,
 *   with reasoning between them) become one assistant message with
 *   `tool_calls`, as Chat Completions wants a turn; texts of several
 *   assistant messages stay separate text parts;
 * - function_call_output {call_id, output} -> a `tool` message; its text
 *   parts are the content, its images follow the run of tool messages as one
 *   user message (a tool message takes text only, and Chat wants the tool
 *   messages of one turn together);
 * - reasoning items -> left out and counted: Chat Completions takes no
 *   reasoning back, and OpenAI's encrypted reasoning means nothing elsewhere;
 * - web_search_call items (history of a built-in tool) -> left out silently;
 * - item_reference, and every other item type (file_search_call,
 *   computer_call, custom_tool_call, compaction, types not invented yet) ->
 *   the problem naming it: the gateway cannot resolve a reference for
 *   another provider, nor say what a built-in tool's item meant.
 * One pass over the items and their parts; nothing recurses on the client's nesting.
 */
export function decodeInput(instructions: unknown, input: unknown, problems: FirstProblem): DecodedInput {
  const conversation = new Conversation();
  let droppedReasoning = 0;
  if (typeof instructions === 'string') {
    if (instructions !== '') conversation.push({ role: 'system', content: instructions }, -1);
  } else if (instructions !== undefined && instructions !== null) problems.invalid('instructions', 'instructions must be a string.');

  if (typeof input === 'string') conversation.push({ role: 'user', content: input }, 0);
  else if (Array.isArray(input)) {
    for (let i = 0; i < input.length; i++) {
      const item = input[i];
      const param = `input[${i}]`;
      const type = isObject(item) ? (item['type'] ?? (item['role'] !== undefined ? 'message' : undefined)) : undefined;
      if (!isObject(item) || typeof type !== 'string') problems.invalid(param, `${param} must be an input item object with a type (or a message with a role).`);
      else if (type === 'message') messageItem(item, i, param, problems, conversation);
      else if (type === 'function_call') {
        const call = functionCall(item, param, problems);
        if (call !== undefined) conversation.assistantCall(call, i);
      } else if (type === 'function_call_output') functionCallOutput(item, i, param, problems, conversation);
      else if (type === 'reasoning') {
        droppedReasoning++;
        conversation.leftOut(i);
      } else if (type === 'web_search_call') {
        // History of OpenAI's own search: the answer that used it follows as a message.
        conversation.leftOut(i);
      } else if (type === 'item_reference') {
        problems.unsupported(param, `${param}: items of type "item_reference" ${NOT_CARRIED}; send the item itself.`);
      } else problems.unsupported(param, `${param}: items of type ${describe(type)} ${NOT_CARRIED}.`);
    }
  } else if (input !== undefined && input !== null) problems.invalid('input', 'input must be a string or an array of input items.');
  const messages = conversation.end();
  return { messages, droppedReasoning, groups: conversation.groups };
}

/**
 * Chat messages as they are built: an assistant turn stays open while
 * assistant-side items follow one another, and images of tool outputs wait
 * for the end of the run of tool messages.
 */
class Conversation {
  readonly #messages: JsonObject[] = [];
  /** Each message's items (DecodedInput.groups). */
  readonly groups: number[][] = [];
  #texts: string[] = [];
  #calls: JsonObject[] = [];
  /** The open assistant turn's items, those left out inside it included. */
  #turn: number[] = [];
  #media: JsonObject[] = [];
  /** Items left out since the last message, waiting for the message they belong to. */
  #waiting: number[] = [];

  /** A user, system or tool message, made from item `item`. */
  push(message: JsonObject, item: number): void {
    this.#closeAssistant();
    if (message['role'] !== 'tool') this.#flushMedia();
    this.#add(message, [...this.#take(), item]);
  }

  assistantText(text: string, item: number): void {
    this.#flushMedia();
    if (text !== '') this.#texts.push(text);
    this.#turn.push(...this.#take(), item);
  }

  assistantCall(call: JsonObject, item: number): void {
    this.#flushMedia();
    this.#calls.push(call);
    this.#turn.push(...this.#take(), item);
  }

  /** An item carried in no message (reasoning, web search history). */
  leftOut(item: number): void {
    if (this.#turn.length > 0) this.#turn.push(item);
    else this.#waiting.push(item);
  }

  /** Images of a tool output, sent after the tool messages. */
  toolMedia(part: JsonObject): void {
    this.#media.push(part);
  }

  end(): JsonObject[] {
    this.#closeAssistant();
    this.#flushMedia();
    const last = this.groups.at(-1);
    if (last !== undefined) last.push(...this.#take());
    return this.#messages;
  }

  #add(message: JsonObject, items: number[]): void {
    this.#messages.push(message);
    this.groups.push(items);
  }

  #take(): number[] {
    const waiting = this.#waiting;
    if (waiting.length > 0) this.#waiting = [];
    return waiting;
  }

  #closeAssistant(): void {
    if (this.#turn.length === 0) return;
    const items = this.#turn;
    this.#turn = [];
    if (this.#texts.length === 0 && this.#calls.length === 0) {
      // Only items left out (an assistant message with no text): they wait for the next message.
      this.#waiting.push(...items);
      return;
    }
    const texts = this.#texts;
    const content = texts.length === 0 ? null : texts.length === 1 ? texts[0] : texts.map((text) => ({ type: 'text', text }));
    const message: JsonObject = { role: 'assistant', content };
    if (this.#calls.length > 0) message['tool_calls'] = this.#calls;
    this.#add(message, items);
    this.#texts = [];
    this.#calls = [];
  }

  #flushMedia(): void {
    if (this.#media.length === 0) return;
    // Images of the tool outputs before it: their items are the tool messages'.
    this.#add({ role: 'user', content: this.#media }, []);
    this.#media = [];
  }
}

function messageItem(item: JsonObject, index: number, param: string, problems: FirstProblem, conversation: Conversation): void {
  const role = item['role'];
  const content = item['content'];
  if (role === 'assistant') {
    if (typeof content === 'string') {
      conversation.assistantText(content, index);
      return;
    }
    let text = '';
    for (const part of contentParts(content, param, problems, 'assistant')) text += part['text'] as string;
    conversation.assistantText(text, index);
    return;
  }
  if (role !== 'user' && role !== 'system' && role !== 'developer') {
    problems.invalid(`${param}.role`, `${param}.role must be "user", "assistant", "system" or "developer".`);
    return;
  }
  const chatRole = role === 'user' ? 'user' : 'system';
  if (typeof content === 'string') {
    conversation.push({ role: chatRole, content }, index);
    return;
  }
  const parts = contentParts(content, param, problems, role === 'user' ? 'user' : 'system');
  conversation.push({ role: chatRole, content: parts.length === 1 && parts[0]!['type'] === 'text' ? parts[0]!['text'] : parts }, index);
}

/** A message's parts as Chat content parts; `where` says which parts the message may hold (only a user message takes images). */
function contentParts(content: unknown, param: string, problems: FirstProblem, where: 'user' | 'system' | 'assistant'): JsonObject[] {
  const parts: JsonObject[] = [];
  if (!Array.isArray(content)) {
    problems.invalid(`${param}.content`, `${param}.content must be a string or an array of content parts.`);
    return parts;
  }
  for (let j = 0; j < content.length; j++) {
    const p = `${param}.content[${j}]`;
    const part = inputPart(content[j], p, problems);
    if (part === undefined) continue;
    if (part['type'] === 'text' || where === 'user') parts.push(part);
    else problems.unsupported(p, `${p}: an image in ${where === 'assistant' ? 'an' : 'a'} ${where} message ${NOT_CARRIED}; send it in a user message.`);
  }
  return parts;
}

/** One content part as Chat's text or image_url part; undefined (a problem noted) when it has none. */
function inputPart(part: unknown, p: string, problems: FirstProblem): JsonObject | undefined {
  const type = isObject(part) ? part['type'] : undefined;
  if (!isObject(part)) problems.invalid(p, `${p} must be a content part object.`);
  else if (type === 'input_text' || type === 'output_text') {
    if (typeof part['text'] === 'string') return { type: 'text', text: part['text'] };
    problems.invalid(`${p}.text`, `${p}.text must be a string.`);
  } else if (type === 'refusal') {
    if (typeof part['refusal'] === 'string') return { type: 'text', text: part['refusal'] };
    problems.invalid(`${p}.refusal`, `${p}.refusal must be a string.`);
  } else if (type === 'input_image') return imagePart(part, p, problems);
  else if (type === 'input_file') {
    problems.unsupported(p, `${p}: input_file parts ${NOT_CARRIED}; send the file's text as input_text, or images as input_image.`);
  } else problems.unsupported(p, `${p}: content parts of type ${describe(type)} ${NOT_CARRIED}.`);
  return undefined;
}

const DETAILS = new Set(['auto', 'low', 'high']);

function imagePart(part: JsonObject, p: string, problems: FirstProblem): JsonObject | undefined {
  const url = part['image_url'];
  if (typeof url === 'string' && url !== '') {
    const image: JsonObject = { url };
    if (typeof part['detail'] === 'string' && DETAILS.has(part['detail'])) image['detail'] = part['detail'];
    return { type: 'image_url', image_url: image };
  }
  if (typeof part['file_id'] === 'string') {
    problems.unsupported(
      `${p}.file_id`,
      `${p}: an image given by file_id cannot be sent to this model: the file is stored at OpenAI, which the gateway does not read for another provider; send image_url (a URL or a data: URL).`,
    );
  } else problems.invalid(p, `${p}: an input_image must have an image_url or a file_id.`);
  return undefined;
}

function functionCall(item: JsonObject, param: string, problems: FirstProblem): JsonObject | undefined {
  const id = item['call_id'];
  const name = item['name'];
  const args = item['arguments'];
  const namespace = item['namespace'];
  if (typeof id !== 'string' || typeof name !== 'string' || typeof args !== 'string') {
    problems.invalid(param, `${param}: a function_call must have a string call_id, name and arguments.`);
    return undefined;
  }
  return { id, type: 'function', function: { name: chatToolName(name, typeof namespace === 'string' ? namespace : undefined), arguments: args } };
}

function functionCallOutput(item: JsonObject, index: number, param: string, problems: FirstProblem, conversation: Conversation): void {
  const id = item['call_id'];
  if (typeof id !== 'string') problems.invalid(`${param}.call_id`, `${param}.call_id must be a string.`);
  const output = item['output'];
  let content: unknown = '';
  if (typeof output === 'string') content = output;
  else if (Array.isArray(output)) {
    const texts: JsonObject[] = [];
    for (let j = 0; j < output.length; j++) {
      const part = inputPart(output[j], `${param}.output[${j}]`, problems);
      if (part === undefined) continue;
      if (part['type'] === 'text') texts.push(part);
      else conversation.toolMedia(part);
    }
    content = texts.length === 1 ? texts[0]!['text'] : texts.length === 0 ? '' : texts;
  } else problems.invalid(`${param}.output`, `${param}.output must be a string or an array of content parts.`);
  conversation.push({ role: 'tool', tool_call_id: typeof id === 'string' ? id : '', content }, index);
}
