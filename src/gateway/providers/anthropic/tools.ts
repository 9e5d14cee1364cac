import { invalidBody } from '../../openai-errors.ts';
import { isObject, type JsonObject } from '../json.ts';

/**
 * OpenAI function tools as Anthropic tools: `function.parameters` (a JSON
 * Schema) becomes `input_schema`, which Anthropic requires (an empty object
 * schema when the function takes none). `strict` has no Anthropic
 * counterpart and is dropped.
 */
export function translateTools(tools: unknown): JsonObject[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalidBody('tools', 'tools must be an array.');
  return tools.map((tool, i) => {
    const fn = isObject(tool) ? tool['function'] : undefined;
    if (!isObject(tool) || tool['type'] !== 'function' || !isObject(fn) || typeof fn['name'] !== 'string') {
      throw invalidBody(`tools[${i}]`, `tools[${i}] must be a function tool with a name; other tool types cannot be sent to Anthropic models.`);
    }
    const out: JsonObject = { name: fn['name'] };
    if (typeof fn['description'] === 'string') out['description'] = fn['description'];
    out['input_schema'] = isObject(fn['parameters']) ? fn['parameters'] : { type: 'object', properties: {} };
    if (isObject(tool['cache_control'])) out['cache_control'] = tool['cache_control'];
    return out;
  });
}

/**
 * tool_choice and parallel_tool_calls as Anthropic's tool_choice: auto ->
 * auto, required -> any, none -> none, a named function -> tool;
 * parallel_tool_calls false -> disable_parallel_tool_use (auto when no
 * choice was given). Undefined when there is nothing to send.
 */
export function translateToolChoice(choice: unknown, parallelToolCalls: unknown): JsonObject | undefined {
  let out: JsonObject | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'required') out = { type: 'any' };
  else if (choice === 'none') out = { type: 'none' };
  else if (isObject(choice)) {
    const fn = choice['function'];
    if (choice['type'] !== 'function' || !isObject(fn) || typeof fn['name'] !== 'string') {
      throw invalidBody('tool_choice', 'tool_choice must be "auto", "required", "none" or {"type": "function", "function": {"name": ...}}.');
    }
    out = { type: 'tool', name: fn['name'] };
  } else if (choice !== undefined && choice !== null) {
    throw invalidBody('tool_choice', 'tool_choice must be "auto", "required", "none" or {"type": "function", "function": {"name": ...}}.');
  }
  if (parallelToolCalls === false && out?.['type'] !== 'none') out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
}
