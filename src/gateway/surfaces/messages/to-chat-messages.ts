import { isObject, type JsonObject } from '../../providers/json.ts';
import { type FirstProblem, NOT_CARRIED } from './uncarried.ts';

/**
 * Anthropic's `system` and `messages` (Messages API reference) as Chat
 * Completions messages. What to-chat.ts's module comment promises, here:
 * - `system` (a string or text blocks) -> one leading system message;
 *   `role: "system"` entries of `messages` (Claude Code 2.x) -> system
 *   messages where they stand. Several text blocks are joined with a blank
 *   line: they are separate pieces a client put side by side.
 * - user content: text -> text parts; image (base64 -> data: URL, url) ->
 *   image_url parts; document: base64 PDF -> a `file` part (file_data a
 *   data: URL, filename from its title, else "document.pdf"), a text
 *   source -> a text part. Content that is only text becomes a string.
 * - tool_result blocks -> one `tool` message each, in order, ahead of the
 *   rest of the user turn (Chat Completions wants the tool answers right
 *   after the assistant's tool_calls). A tool message carries text only, so
 *   its text blocks are joined into its content and its images and
 *   documents go, in order, at the head of a user message right after the
 *   tool messages, followed by the rest of that turn's content. An
 *   `is_error: true` result's content starts with "Error: " (just "Error"
 *   when it had none), so the model still sees that the call failed.
 * - assistant content: text blocks joined as they are (they are pieces of
 *   one generated text, split where citations were), tool_use ->
 *   `tool_calls` in order (arguments = the input as JSON); content null
 *   when there are only tool calls; an assistant turn left with neither
 *   (only thinking blocks) is left out.
 * - thinking and redacted_thinking blocks are left out wherever they are:
 *   Chat Completions cannot take them back, and the signed text means
 *   nothing to another model.
 * - cache_control, citations and other block fields are dropped.
 * Anything else (search_result, server_tool_use, *_tool_result,
 * container_upload, tool_reference, unknown block types, image or document
 * sources other than those above, a role other than user, assistant or
 * system) is noted as the problem naming it and where, and left out.
 * One pass over messages, blocks and the blocks of a tool result: linear,
 * no recursion.
 */
export function decodeConversation(system: unknown, messages: unknown, problems: FirstProblem): JsonObject[] {
  const out: JsonObject[] = [];
  if (system !== undefined && system !== null) {
    const text = systemText(system, 'system', problems);
    if (text !== undefined && text !== '') out.push({ role: 'system', content: text });
  }
  if (!Array.isArray(messages)) {
    problems.invalid('messages', 'messages must be an array of messages.');
    return out;
  }
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!isObject(message)) {
      problems.invalid(`messages[${i}]`, `messages[${i}] must be an object with a role and content.`);
      continue;
    }
    const role = message['role'];
    if (role === 'user') userMessages(message['content'], i, problems, out);
    else if (role === 'assistant') assistantMessage(message['content'], i, problems, out);
    else if (role === 'system') {
      const text = systemText(message['content'], `messages[${i}].content`, problems);
      if (text !== undefined) out.push({ role: 'system', content: text });
    } else problems.unsupported(`messages[${i}].role`, `messages[${i}].role ${describe(role)} ${NOT_CARRIED}.`);
  }
  return out;
}

/** A system prompt: a string, or text blocks joined with a blank line. Undefined (and a problem noted) for anything else. */
function systemText(content: unknown, param: string, problems: FirstProblem): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    problems.invalid(param, `${param} must be a string or an array of text blocks.`);
    return undefined;
  }
  let text = '';
  for (let j = 0; j < content.length; j++) {
    const block = content[j];
    if (isObject(block) && block['type'] === 'text' && typeof block['text'] === 'string') {
      text = j === 0 ? block['text'] : `${text}\n\n${block['text']}`;
    } else problems.unsupported(`${param}[${j}]`, `${param}[${j}]: a system prompt of ${blockKind(block)} ${NOT_CARRIED}; send text blocks.`);
  }
  return text;
}

/** A user turn: its tool results as tool messages, then one user message with the rest (if any). */
function userMessages(content: unknown, i: number, problems: FirstProblem, out: JsonObject[]): void {
  if (typeof content === 'string') {
    out.push({ role: 'user', content });
    return;
  }
  if (!Array.isArray(content)) {
    problems.invalid(`messages[${i}].content`, `messages[${i}].content must be a string or an array of content blocks.`);
    return;
  }
  /** Images and documents of tool results: they lead the user message that follows the tool messages. */
  const fromResults: JsonObject[] = [];
  const parts: JsonObject[] = [];
  let sawResult = false;
  for (let j = 0; j < content.length; j++) {
    const block = content[j];
    const type = isObject(block) ? block['type'] : undefined;
    if (type === 'tool_result') {
      sawResult = true;
      out.push(toolMessage(block as JsonObject, i, j, problems, fromResults));
    } else if (type === 'thinking' || type === 'redacted_thinking') {
      // Not taken back by Chat Completions (see the module comment).
    } else {
      const part = userPart(block, () => `messages[${i}].content[${j}]`, problems);
      if (part !== undefined) parts.push(part);
    }
  }
  if (fromResults.length === 0 && parts.length === 0 && sawResult) return;
  // A loop rather than a spread: a spread passes each part as an argument, and a turn can hold very many.
  for (const part of parts) fromResults.push(part);
  out.push({ role: 'user', content: textOnly(fromResults) ?? fromResults });
}

/** One tool_result block as a `tool` message; its images and documents are added to `media`. */
function toolMessage(block: JsonObject, i: number, j: number, problems: FirstProblem, media: JsonObject[]): JsonObject {
  const id = block['tool_use_id'];
  if (typeof id !== 'string') problems.invalid(`messages[${i}].content[${j}].tool_use_id`, `messages[${i}].content[${j}].tool_use_id must be a string.`);
  const content = block['content'];
  let text = '';
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    for (let k = 0; k < content.length; k++) {
      const inner = content[k];
      if (isObject(inner) && inner['type'] === 'text' && typeof inner['text'] === 'string') {
        text = text === '' ? inner['text'] : `${text}\n\n${inner['text']}`;
        continue;
      }
      const part = userPart(inner, () => `messages[${i}].content[${j}].content[${k}]`, problems);
      if (part !== undefined) media.push(part);
    }
  } else if (content !== undefined && content !== null) {
    problems.invalid(`messages[${i}].content[${j}].content`, `messages[${i}].content[${j}].content must be a string or an array of content blocks.`);
  }
  if (block['is_error'] === true) text = text === '' ? 'Error' : `Error: ${text}`;
  return { role: 'tool', tool_call_id: typeof id === 'string' ? id : '', content: text };
}

/** One block of user content as a Chat Completions content part; undefined (a problem noted) when it has none. */
export function userPart(block: unknown, where: () => string, problems: FirstProblem): JsonObject | undefined {
  if (!isObject(block)) {
    problems.invalid(where(), `${where()} must be a content block object.`);
    return undefined;
  }
  const type = block['type'];
  if (type === 'text') {
    if (typeof block['text'] === 'string') return { type: 'text', text: block['text'] };
    problems.invalid(`${where()}.text`, `${where()}.text must be a string.`);
    return undefined;
  }
  if (type === 'image') return imagePart(block['source'], where, problems);
  if (type === 'document') return documentPart(block, where, problems);
  problems.unsupported(where(), `${where()}: ${blockKind(block)} ${NOT_CARRIED}.`);
  return undefined;
}

function imagePart(source: unknown, where: () => string, problems: FirstProblem): JsonObject | undefined {
  const type = isObject(source) ? source['type'] : undefined;
  if (isObject(source) && type === 'base64' && typeof source['media_type'] === 'string' && typeof source['data'] === 'string') {
    return { type: 'image_url', image_url: { url: `data:${source['media_type']};base64,${source['data']}` } };
  }
  if (isObject(source) && type === 'url' && typeof source['url'] === 'string') return { type: 'image_url', image_url: { url: source['url'] } };
  problems.unsupported(`${where()}.source`, `${where()}.source: an image source of type ${describe(type)} ${NOT_CARRIED}; send base64 data or a url.`);
  return undefined;
}

function documentPart(block: JsonObject, where: () => string, problems: FirstProblem): JsonObject | undefined {
  const source = block['source'];
  const type = isObject(source) ? source['type'] : undefined;
  if (isObject(source) && typeof source['data'] === 'string') {
    if (type === 'text') return { type: 'text', text: source['data'] };
    if (type === 'base64' && source['media_type'] === 'application/pdf') {
      const title = block['title'];
      const filename = typeof title === 'string' && title !== '' ? title : 'document.pdf';
      return { type: 'file', file: { filename, file_data: `data:application/pdf;base64,${source['data']}` } };
    }
  }
  problems.unsupported(
    `${where()}.source`,
    `${where()}.source: a document source of type ${describe(type)} ${NOT_CARRIED}; send a base64 PDF or plain text.`,
  );
  return undefined;
}

/** An assistant turn: text as content, tool_use blocks as tool_calls. */
function assistantMessage(content: unknown, i: number, problems: FirstProblem, out: JsonObject[]): void {
  if (typeof content === 'string') {
    out.push({ role: 'assistant', content });
    return;
  }
  if (!Array.isArray(content)) {
    problems.invalid(`messages[${i}].content`, `messages[${i}].content must be a string or an array of content blocks.`);
    return;
  }
  let text: string | undefined;
  const calls: JsonObject[] = [];
  for (let j = 0; j < content.length; j++) {
    const block = content[j];
    const type = isObject(block) ? block['type'] : undefined;
    if (!isObject(block)) problems.invalid(`messages[${i}].content[${j}]`, `messages[${i}].content[${j}] must be a content block object.`);
    else if (type === 'text') {
      if (typeof block['text'] === 'string') text = (text ?? '') + block['text'];
      else problems.invalid(`messages[${i}].content[${j}].text`, `messages[${i}].content[${j}].text must be a string.`);
    } else if (type === 'tool_use') {
      const call = toolCall(block, `messages[${i}].content[${j}]`, problems);
      if (call !== undefined) calls.push(call);
    } else if (type !== 'thinking' && type !== 'redacted_thinking') {
      problems.unsupported(`messages[${i}].content[${j}]`, `messages[${i}].content[${j}]: ${blockKind(block)} ${NOT_CARRIED}.`);
    }
  }
  if (text === undefined && calls.length === 0) return;
  const message: JsonObject = { role: 'assistant', content: text ?? null };
  if (calls.length > 0) message['tool_calls'] = calls;
  out.push(message);
}

export function toolCall(block: JsonObject, param: string, problems: FirstProblem): JsonObject | undefined {
  const id = block['id'];
  const name = block['name'];
  if (typeof id !== 'string' || typeof name !== 'string') {
    problems.invalid(param, `${param} must have a string id and name.`);
    return undefined;
  }
  let args: string;
  try {
    // JSON.stringify recurses natively: an input nested deep enough overflows the stack (a RangeError), noted, never thrown.
    args = JSON.stringify(block['input'] ?? {});
  } catch {
    problems.invalid(`${param}.input`, `${param}.input is nested too deeply.`);
    return undefined;
  }
  return { id, type: 'function', function: { name, arguments: args } };
}

/** Parts that are all text, as one string (joined with a blank line); undefined when any part is not text. */
function textOnly(parts: JsonObject[]): string | undefined {
  let text = '';
  for (let k = 0; k < parts.length; k++) {
    const part = parts[k]!;
    if (part['type'] !== 'text') return undefined;
    text = k === 0 ? (part['text'] as string) : `${text}\n\n${part['text'] as string}`;
  }
  return text;
}

/** How a block is named in a message: `blocks of type "search_result"`. */
function blockKind(block: unknown): string {
  const type = isObject(block) ? block['type'] : undefined;
  return `content blocks of type ${describe(type)}`;
}

/** A client value named in a message, short and printable whatever it is. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
  if (value === undefined) return '(none)';
  return Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
}
