import { textOf } from '../../compaction/messages.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';

/** What a Responses request becomes once compaction's change is written into it. */
export interface WrittenBack {
  /** The request to send: `input` (and `instructions`) with the change carried. */
  body: JsonObject;
  /** The stages' messages that match it: compaction's, with the client's put back where a change could not be carried. */
  messages: unknown[];
  origin: number[];
}

/**
 * Compaction changed the stages' messages (`sent`, each from the client's
 * message `origin[k]`, unchanged ones the same objects): writes the change
 * into the Responses request's items, so that what OpenAI is sent is what
 * was counted. `groups[k]` are the items message k was made from
 * (to-chat.ts). A dropped message drops its items (the reasoning and
 * built-in tool history of its turn with it); a changed message is carried
 * where its items can say it: `instructions`, a user, system or developer
 * message's content (text and images), a function_call_output's output
 * (when it held text only). An assistant turn (its reasoning, text and
 * calls belong together) or anything else changed is put back as the
 * client sent it, in the stages' messages too. Items in no message (what a
 * translation could not carry, and OpenAI can) stay where they are.
 * Linear in the number of items and messages.
 */
export function writeBack(
  body: JsonObject,
  groups: readonly (readonly number[])[],
  client: readonly unknown[],
  sent: readonly unknown[],
  origin: readonly number[],
): WrittenBack {
  const input = typeof body['input'] === 'string' ? [{ role: 'user', content: body['input'] }] : Array.isArray(body['input']) ? body['input'] : [];
  const replaced = new Map<number, unknown>();
  const kept = new Uint8Array(client.length);
  let instructions: string | undefined;
  const messages: unknown[] = [];
  for (let j = 0; j < sent.length; j++) {
    const k = origin[j]!;
    kept[k] = 1;
    const message = sent[j];
    if (message === client[k]) {
      messages.push(message);
      continue;
    }
    const group = groups[k] ?? [];
    const carried = carry(message, group, input);
    if (carried === undefined) {
      messages.push(client[k]);
      continue;
    }
    if (carried.instructions !== undefined) instructions = carried.instructions;
    else replaced.set(carried.at, carried.item);
    messages.push(message);
  }
  const dropped = new Uint8Array(input.length);
  for (let k = 0; k < client.length; k++) {
    if (kept[k] === 1) continue;
    for (const i of groups[k] ?? []) if (i >= 0) dropped[i] = 1;
  }
  const items: unknown[] = [];
  for (let i = 0; i < input.length; i++) {
    if (dropped[i] === 1) continue;
    items.push(replaced.has(i) ? replaced.get(i) : input[i]);
  }
  const out: JsonObject = { ...body, input: items };
  if (instructions !== undefined) out['instructions'] = instructions;
  return { body: out, messages, origin: [...origin] };
}

/** A changed message as the one item that carries it (or `instructions`); undefined when its items cannot say it. */
function carry(message: unknown, group: readonly number[], input: readonly unknown[]): { at: number; item: unknown; instructions?: string } | undefined {
  if (!isObject(message)) return undefined;
  const role = message['role'];
  const content = message['content'];
  // The one item of the group that made the message: the others are left out of it (reasoning, search history).
  const own = group.filter((i) => i < 0 || !leftOut(input[i]));
  if (own.length !== 1) return undefined;
  const at = own[0]!;
  if (at < 0) return role === 'system' && typeof content === 'string' ? { at, item: undefined, instructions: content } : undefined;
  const item = input[at];
  if (!isObject(item)) return undefined;
  const type = item['type'] ?? 'message';
  if (role === 'tool' && type === 'function_call_output') {
    if (Array.isArray(item['output']) && item['output'].some((part) => !isObject(part) || part['type'] !== 'input_text')) return undefined;
    const text = textOf(content);
    return text === undefined ? undefined : { at, item: { ...item, output: text } };
  }
  if ((role === 'user' || role === 'system') && type === 'message' && item['role'] !== 'assistant') {
    const parts = responseContent(content);
    return parts === undefined ? undefined : { at, item: { ...item, content: parts } };
  }
  return undefined;
}

function leftOut(item: unknown): boolean {
  const type = isObject(item) ? item['type'] : undefined;
  return type === 'reasoning' || type === 'web_search_call';
}

/** Chat content as a Responses message's content: a string, or input_text and input_image parts. */
function responseContent(content: unknown): unknown {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const parts: JsonObject[] = [];
  for (const part of content) {
    if (!isObject(part)) return undefined;
    if (part['type'] === 'text' && typeof part['text'] === 'string') parts.push({ type: 'input_text', text: part['text'] });
    else if (part['type'] === 'image_url' && isObject(part['image_url']) && typeof part['image_url']['url'] === 'string') {
      const image: JsonObject = { type: 'input_image', image_url: part['image_url']['url'] };
      if (typeof part['image_url']['detail'] === 'string') image['detail'] = part['image_url']['detail'];
      parts.push(image);
    } else return undefined;
  }
  return parts;
}
