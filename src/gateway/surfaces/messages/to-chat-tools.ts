import { isObject, type JsonObject } from '../../providers/json.ts';
import { describe } from './to-chat-messages.ts';
import { type FirstProblem, NOT_CARRIED } from './uncarried.ts';

export interface DecodedTools {
  /** Function tools; undefined when none is left. */
  tools: JsonObject[] | undefined;
  /** Chat Completions' tool_choice; undefined: none to send. */
  toolChoice: unknown;
  /** `false` when the client disabled parallel tool use; undefined otherwise. */
  parallelToolCalls: false | undefined;
  /** Names of the tools left out. */
  omitted: string[];
}

/**
 * Anthropic `tools` and `tool_choice` (Messages API reference, "Tools") in
 * Chat Completions terms:
 * - a custom tool (no `type`, or `type: "custom"`) -> a function tool: name,
 *   description, `input_schema` as `parameters` (an empty object schema when
 *   missing), `strict: true` kept; its other fields (cache_control,
 *   defer_loading, input_examples, allowed_callers, ...) dropped;
 * - a tool with any other `type` (web_search_*, web_fetch_*,
 *   code_execution_*, bash_*, text_editor_*, computer_*, memory_*, tool
 *   search, and types not invented yet): its schema is Anthropic's own or
 *   the tool runs on Anthropic's side, so it is left out and named in
 *   `omitted` (its name, else its type);
 * - tool_choice auto -> "auto", any -> "required", none -> "none",
 *   tool -> {type: "function", function: {name}};
 *   disable_parallel_tool_use: true -> parallel_tool_calls: false;
 * - a tool_choice that forces a tool left out (by name, or `any` when only
 *   left-out tools remain) is the problem naming it (param `tool_choice`):
 *   the model could not do what the client required;
 * - with no function tool left, neither tool_choice nor parallel_tool_calls
 *   is sent (OpenAI refuses them without tools).
 */
export function decodeTools(tools: unknown, choice: unknown, problems: FirstProblem): DecodedTools {
  const functions: JsonObject[] = [];
  const omitted: string[] = [];
  if (Array.isArray(tools)) {
    for (let i = 0; i < tools.length; i++) {
      const tool = tools[i];
      if (!isObject(tool)) {
        problems.invalid(`tools[${i}]`, `tools[${i}] must be a tool object.`);
        continue;
      }
      const type = tool['type'];
      const name = tool['name'];
      if (type !== undefined && type !== null && type !== 'custom') {
        omitted.push(typeof name === 'string' ? name : String(type));
        continue;
      }
      if (typeof name !== 'string') {
        problems.invalid(`tools[${i}].name`, `tools[${i}].name must be a string.`);
        continue;
      }
      const fn: JsonObject = { name };
      if (typeof tool['description'] === 'string') fn['description'] = tool['description'];
      fn['parameters'] = isObject(tool['input_schema']) ? tool['input_schema'] : { type: 'object', properties: {} };
      if (tool['strict'] === true) fn['strict'] = true;
      functions.push({ type: 'function', function: fn });
    }
  } else if (tools !== undefined && tools !== null) problems.invalid('tools', 'tools must be an array of tools.');

  const decoded: DecodedTools = { tools: functions.length > 0 ? functions : undefined, toolChoice: undefined, parallelToolCalls: undefined, omitted };
  if (!isObject(choice)) {
    if (choice !== undefined && choice !== null) problems.invalid('tool_choice', 'tool_choice must be an object with a type.');
    return decoded;
  }
  const type = choice['type'];
  let mapped: unknown;
  if (type === 'auto') mapped = 'auto';
  else if (type === 'none') mapped = 'none';
  else if (type === 'any') {
    if (functions.length === 0 && omitted.length > 0) {
      problems.unsupported('tool_choice', `tool_choice "any" forces one of ${omittedList(omitted)}, and a tool of that kind ${NOT_CARRIED}.`);
    }
    mapped = 'required';
  } else if (type === 'tool' && typeof choice['name'] === 'string') {
    const name = choice['name'];
    if (omitted.includes(name)) problems.unsupported('tool_choice', `tool_choice forces the tool ${describe(name)}, and a tool of its kind ${NOT_CARRIED}.`);
    mapped = { type: 'function', function: { name } };
  } else {
    problems.invalid('tool_choice', `tool_choice of type ${describe(type)} is not one of auto, any, tool (with a name) or none.`);
  }
  if (functions.length === 0) return decoded;
  decoded.toolChoice = mapped;
  if (choice['disable_parallel_tool_use'] === true && type !== 'none') decoded.parallelToolCalls = false;
  return decoded;
}

function omittedList(names: string[]): string {
  const shown = names.slice(0, 5).map(describe).join(', ');
  return names.length > 5 ? `${shown} and ${names.length - 5} more` : shown;
}
