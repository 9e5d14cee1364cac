import { isObject, type JsonObject } from '../../providers/json.ts';
import { describe } from '../messages/to-chat-messages.ts';
import type { FirstProblem } from '../messages/uncarried.ts';
import { chatToolName, type ResponsesToolName } from './tool-names.ts';
import { NOT_CARRIED } from './uncarried.ts';

export interface DecodedTools {
  /** Function tools in Chat's shape; undefined when none is left. */
  tools: JsonObject[] | undefined;
  /** Chat Completions' tool_choice; undefined: none to send. */
  toolChoice: unknown;
  /** The client's parallel_tool_calls, when there are function tools to send it with. */
  parallelToolCalls: boolean | undefined;
  /** Types of the built-in tools left out, each once. */
  omitted: string[];
  /** A web search tool was asked for and the target is Anthropic. */
  webSearch: boolean;
  /** Chat name -> Responses name of each namespaced function. */
  toolNames: Map<string, ResponsesToolName>;
}

/**
 * Responses `tools`, `tool_choice` and `parallel_tool_calls` (API reference,
 * "Create a model response") in Chat Completions terms:
 * - a `function` tool {name, description, parameters, strict} -> Chat's
 *   {type: "function", function: {...}}, an empty object schema when it has
 *   no parameters (the Anthropic adapter needs one), `strict` only when the
 *   client set it (a provider other than OpenAI may refuse it);
 * - a `namespace` tool -> its function tools, each named
 *   `namespace__name` (tool-names.ts); its custom tools are left out;
 * - `web_search` and `web_search_preview` (and their dated versions) -> left
 *   out, unless the target is Anthropic: then `webSearch` (the caller adds
 *   Anthropic's web search server tool);
 * - every other type (file_search, computer_use_preview, code_interpreter,
 *   image_generation, mcp, local_shell, shell, apply_patch, custom, types
 *   not invented yet) -> left out, named in `omitted` by its type: it runs
 *   on OpenAI's side or has a grammar Chat Completions cannot express;
 * - tool_choice "auto", "none", "required" as they are;
 *   {type: "function", name} -> {type: "function", function: {name}} (the
 *   name of a namespaced function may be given alone);
 *   {type: "allowed_tools", mode, tools} -> mode, with only the allowed
 *   functions sent (the same restriction, said the way every provider takes);
 * - a tool_choice that forces a tool left out (a built-in type, "required"
 *   or allowed_tools "required" with only such tools) is the problem naming
 *   it: the model could not do what the client required. Forcing web search
 *   on Anthropic is refused too: Chat's tool_choice cannot name a server tool;
 * - with no function tool left, neither tool_choice nor parallel_tool_calls
 *   is sent (OpenAI refuses them without tools).
 */
export function decodeTools(tools: unknown, choice: unknown, parallel: unknown, anthropic: boolean, problems: FirstProblem): DecodedTools {
  const decoded: DecodedTools = { tools: undefined, toolChoice: undefined, parallelToolCalls: undefined, omitted: [], webSearch: false, toolNames: new Map() };
  let functions: JsonObject[] = [];
  /** Names of a namespaced function without its namespace -> its Chat name; undefined when two namespaces share it. */
  const innerNames = new Map<string, string | undefined>();
  const names = new Set<string>();
  const omitted = new Set<string>();
  const omit = (type: string) => {
    if (omitted.has(type)) return;
    omitted.add(type);
    decoded.omitted.push(type);
  };
  const add = (tool: JsonObject, param: string, namespace: string | undefined) => {
    const fn = functionTool(tool, param, namespace, problems);
    if (fn === undefined) return;
    if (names.has(fn.chatName)) {
      problems.invalid(`${param}.name`, `${param}: the function name ${describe(fn.chatName)} is used twice (a function of a namespace is sent as "namespace__name").`);
      return;
    }
    names.add(fn.chatName);
    functions.push(fn.tool);
    if (namespace === undefined) return;
    const name = tool['name'] as string;
    decoded.toolNames.set(fn.chatName, { name, namespace });
    innerNames.set(name, innerNames.has(name) ? undefined : fn.chatName);
  };

  if (Array.isArray(tools)) {
    for (let i = 0; i < tools.length; i++) {
      const tool = tools[i];
      const type = isObject(tool) ? tool['type'] : undefined;
      if (!isObject(tool) || typeof type !== 'string') {
        problems.invalid(`tools[${i}]`, `tools[${i}] must be a tool object with a type.`);
      } else if (type === 'function') add(tool, `tools[${i}]`, undefined);
      else if (type === 'namespace') {
        const namespace = tool['name'];
        const inner = tool['tools'];
        if (typeof namespace !== 'string' || namespace === '' || !Array.isArray(inner)) {
          problems.invalid(`tools[${i}]`, `tools[${i}]: a namespace tool must have a name and an array of tools.`);
          continue;
        }
        for (let j = 0; j < inner.length; j++) {
          const member = inner[j];
          const memberType = isObject(member) ? member['type'] : undefined;
          if (isObject(member) && memberType === 'function') add(member, `tools[${i}].tools[${j}]`, namespace);
          else if (typeof memberType === 'string') omit(memberType);
          else problems.invalid(`tools[${i}].tools[${j}]`, `tools[${i}].tools[${j}] must be a tool object with a type.`);
        }
      } else if (anthropic && isWebSearch(type)) decoded.webSearch = true;
      else omit(type);
    }
  } else if (tools !== undefined && tools !== null) problems.invalid('tools', 'tools must be an array of tools.');

  // A name given alone is a plain function's, else the one namespaced function that has it.
  const resolve = (name: string) => (names.has(name) ? name : (innerNames.get(name) ?? name));
  const mapped = toolChoice(choice, decoded, functions.length > 0, resolve, problems);
  if (mapped.allowed !== undefined) {
    const allowed = mapped.allowed;
    functions = functions.filter((tool) => allowed.has((tool['function'] as JsonObject)['name'] as string));
    if (functions.length === 0 && mapped.choice === 'required') {
      problems.unsupported('tool_choice', `tool_choice allowed_tools "required" allows no function tool, and a built-in tool ${NOT_CARRIED}.`);
    }
  }
  if (functions.length === 0) return decoded;
  decoded.tools = functions;
  decoded.toolChoice = mapped.choice;
  if (typeof parallel === 'boolean') decoded.parallelToolCalls = parallel;
  return decoded;
}

function isWebSearch(type: string): boolean {
  return type === 'web_search' || type === 'web_search_preview' || type.startsWith('web_search_2') || type.startsWith('web_search_preview_');
}

function functionTool(tool: JsonObject, param: string, namespace: string | undefined, problems: FirstProblem): { tool: JsonObject; chatName: string } | undefined {
  const name = tool['name'];
  if (typeof name !== 'string' || name === '') {
    problems.invalid(`${param}.name`, `${param}.name must be a non-empty string.`);
    return undefined;
  }
  const chatName = chatToolName(name, namespace);
  const fn: JsonObject = { name: chatName };
  if (typeof tool['description'] === 'string') fn['description'] = tool['description'];
  fn['parameters'] = isObject(tool['parameters']) ? tool['parameters'] : { type: 'object', properties: {} };
  if (typeof tool['strict'] === 'boolean') fn['strict'] = tool['strict'];
  return { tool: { type: 'function', function: fn }, chatName };
}

/** tool_choice in Chat's terms; `allowed`: the Chat names of the functions allowed_tools lets through. */
function toolChoice(
  choice: unknown,
  decoded: DecodedTools,
  hasFunctions: boolean,
  resolve: (name: string) => string,
  problems: FirstProblem,
): { choice: unknown; allowed?: Set<string> } {
  if (choice === undefined || choice === null) return { choice: undefined };
  if (choice === 'auto' || choice === 'none') return { choice };
  if (choice === 'required') {
    if (!hasFunctions && (decoded.omitted.length > 0 || decoded.webSearch)) {
      problems.unsupported('tool_choice', `tool_choice "required" forces one of the built-in tools (${builtIns(decoded)}), and a built-in tool ${NOT_CARRIED}.`);
    }
    return { choice };
  }
  if (!isObject(choice)) {
    problems.invalid('tool_choice', 'tool_choice must be "auto", "none", "required" or an object with a type.');
    return { choice: undefined };
  }
  const type = choice['type'];
  if (type === 'function') {
    const name = choice['name'];
    if (typeof name !== 'string') {
      problems.invalid('tool_choice.name', 'tool_choice.name must be a string.');
      return { choice: undefined };
    }
    return { choice: { type: 'function', function: { name: resolve(name) } } };
  }
  if (type === 'allowed_tools') {
    const mode = choice['mode'];
    const tools = choice['tools'];
    if ((mode !== 'auto' && mode !== 'required') || !Array.isArray(tools)) {
      problems.invalid('tool_choice', 'tool_choice of type "allowed_tools" must have a mode ("auto" or "required") and an array of tools.');
      return { choice: undefined };
    }
    const allowed = new Set<string>();
    for (const tool of tools) {
      if (isObject(tool) && tool['type'] === 'function' && typeof tool['name'] === 'string') {
        allowed.add(resolve(tool['name']));
      }
    }
    return { choice: mode, allowed };
  }
  problems.unsupported('tool_choice', `tool_choice forces a tool of type ${describe(type)}, and a built-in tool ${NOT_CARRIED}.`);
  return { choice: undefined };
}

function builtIns(decoded: DecodedTools): string {
  const types = decoded.webSearch ? ['web_search', ...decoded.omitted.slice(0, 4)] : decoded.omitted.slice(0, 5);
  const more = decoded.omitted.length + (decoded.webSearch ? 1 : 0) - types.length;
  const shown = types.map(describe).join(', ');
  return more > 0 ? `${shown} and ${more} more` : shown;
}
