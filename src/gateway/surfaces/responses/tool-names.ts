/**
 * Function names across the two APIs. The Responses API groups function
 * tools under a `namespace` tool ({type: "namespace", name: "crm", tools:
 * [...]}); the model calls one as `name` within `namespace`, and OpenAI
 * reports the call with both fields (a function_call item's `namespace`).
 * Chat Completions has flat names only, limited to letters, digits, `_` and
 * `-` (so `crm.lookup` is not a name there): a namespaced function is sent
 * as `crm__lookup`, and the answer's calls are mapped back through the
 * table decodeResponses builds, never by splitting the name (a namespace
 * may itself contain `__`, as Codex's MCP namespaces do).
 */

/** A function as the Responses API names it. */
export interface ResponsesToolName {
  name: string;
  namespace?: string;
}

/** Chat function name -> the Responses name, for namespaced functions only (every other name is the same in both). */
export type ToolNames = ReadonlyMap<string, ResponsesToolName>;

const SEPARATOR = '__';

/** The Chat Completions name of a function, `namespace__name` when it has a namespace. */
export function chatToolName(name: string, namespace: string | undefined): string {
  return namespace === undefined || namespace === '' ? name : `${namespace}${SEPARATOR}${name}`;
}

/** The Responses name of a function the model called by its Chat name. */
export function responsesToolName(chatName: string, names: ToolNames | undefined): ResponsesToolName {
  return names?.get(chatName) ?? { name: chatName };
}
