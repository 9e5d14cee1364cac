import { isObject, type JsonObject } from '../../providers/json.ts';

/**
 * The items of stored responses: the ids they are listed and paginated by
 * (GET /v1/responses/{id}/input_items takes an item id as `after`), and
 * the shape they are listed in.
 */

/** The id prefix OpenAI gives each kind of item; any other kind is an `item_`. */
const PREFIXES: Record<string, string> = {
  message: 'msg',
  function_call: 'fc',
  function_call_output: 'fco',
  reasoning: 'rs',
  custom_tool_call: 'ctc',
  custom_tool_call_output: 'ctco',
};

/** A message written the short way (`{role, content}`, no `type`) is a message too. */
function itemType(item: JsonObject): string | undefined {
  const type = item['type'];
  if (typeof type === 'string') return type;
  return item['role'] !== undefined ? 'message' : undefined;
}

const hasId = (item: JsonObject) => typeof item['id'] === 'string' && item['id'] !== '';

/**
 * `items` with an id on each: an item's own, else one derived from the
 * response id, where the item sits (`in` for the turn's input, `out` for
 * the response's output, which the route's own ids never use) and its
 * index, so the same record always gets the same ids and they are unique
 * across a chain. Items that have one are returned as they are.
 */
export function withItemIds(items: readonly JsonObject[], responseId: string, where: 'in' | 'out'): JsonObject[] {
  const stem = responseId.startsWith('resp_') ? responseId.slice('resp_'.length) : responseId;
  const out: JsonObject[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (hasId(item)) {
      out[i] = item;
      continue;
    }
    const type = itemType(item);
    const copy: JsonObject = { id: `${(type && PREFIXES[type]) ?? 'item'}_${stem}_${where}${i}` };
    for (const key in item) if (key !== 'id') copy[key] = item[key];
    out[i] = copy;
  }
  return out;
}

/** The response's `output` items, each with an id (withItemIds); the response itself when they all had one. */
export function withOutputIds(response: JsonObject, responseId: string): JsonObject {
  const output = outputItems(response);
  if (output.every(hasId)) return response;
  return { ...response, output: withItemIds(output, responseId, 'out') };
}

/** A stored response's output items (the objects of its `output`). */
export function outputItems(response: JsonObject): JsonObject[] {
  const output = response['output'];
  return Array.isArray(output) ? output.filter(isObject) : [];
}

/**
 * An item as GET /v1/responses/{id}/input_items lists it: as stored, but a
 * message written the short way gets its `type`, and a string `content`
 * becomes the one text part OpenAI lists it as (`input_text`, or
 * `output_text` for an assistant's). Items go upstream as stored; this is
 * only how they are shown.
 */
export function listedItem(item: JsonObject): JsonObject {
  if (itemType(item) !== 'message') return item;
  const content = item['content'];
  if (item['type'] === 'message' && typeof content !== 'string') return item;
  const listed: JsonObject = { ...item, type: 'message' };
  if (typeof content === 'string') listed['content'] = [{ type: item['role'] === 'assistant' ? 'output_text' : 'input_text', text: content }];
  return listed;
}
