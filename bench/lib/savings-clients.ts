/**
 * The two clients the savings benchmark replays (bench/benchmarks/gateway-savings.ts),
 * each turning a turn of the corpus into the OpenAI-shaped request it sends
 * (straight to the provider, or to the gateway):
 * - `naive`: the conversation as it is, no cache hints;
 * - `cache-aware`: what Claude Code, Codex and most agent frameworks send.
 *   For an Anthropic model, `cache_control: {type: "ephemeral"}` on the last
 *   tool definition, on the system prompt's last part and on the last
 *   message's last part (three of Anthropic's four breakpoints; the string
 *   contents they need become one text part). Tool results are always sent
 *   as text parts, so that a message keeps one shape from turn to turn (a
 *   tool result that was the last message, marked, is sent the same way
 *   the turn after): SDK clients build their blocks that way, and a result
 *   sent as a string one turn and as parts the next would change the prompt
 *   the provider caches. For an OpenAI model, `prompt_cache_key` derived from
 *   the session id, nothing else.
 */

export type ClientName = 'naive' | 'cache-aware';
export const CLIENTS: readonly ClientName[] = ['naive', 'cache-aware'];

export interface Message {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: string;
  [field: string]: unknown;
}

export interface ClientRequest {
  model: string;
  messages: Message[];
  tools?: unknown[];
  prompt_cache_key?: string;
}

const EPHEMERAL = { type: 'ephemeral' } as const;

/** The request `client` sends for one turn of a session, for a model named `provider/id`. */
export function clientRequest(client: ClientName, model: string, sessionId: string, messages: readonly Message[], tools: unknown[] | undefined): ClientRequest {
  const naive: ClientRequest = { model, messages: [...messages], ...(tools ? { tools } : {}) };
  if (client === 'naive') return naive;
  if (!model.startsWith('anthropic/')) return { ...naive, prompt_cache_key: `bench-session-${sessionId}` };
  return { model, messages: markMessages(messages), ...(tools ? { tools: markLastTool(tools) } : {}) };
}

/** Content as a list of parts (a copy: the corpus is never changed). */
function parts(content: unknown): Record<string, unknown>[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.map((p) => ({ ...(p as Record<string, unknown>) })) : [];
}

function withMarkOnLastPart(message: Message): Message {
  const list = parts(message.content);
  if (list.length === 0) return message;
  list[list.length - 1] = { ...list[list.length - 1], cache_control: EPHEMERAL };
  return { ...message, content: list };
}

function markMessages(messages: readonly Message[]): Message[] {
  let system = -1;
  for (let i = 0; i < messages.length && (messages[i]!.role === 'system' || messages[i]!.role === 'developer'); i++) system = i;
  const last = messages.length - 1;
  return messages.map((m, i) => {
    if (i === system || i === last) return withMarkOnLastPart(m);
    if (m.role === 'tool' && typeof m.content === 'string') return { ...m, content: parts(m.content) };
    return m;
  });
}

function markLastTool(tools: unknown[]): unknown[] {
  if (tools.length === 0) return tools;
  const out = [...tools];
  out[out.length - 1] = { ...(out[out.length - 1] as Record<string, unknown>), cache_control: EPHEMERAL };
  return out;
}
