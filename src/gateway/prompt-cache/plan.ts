import type { PromptCachePlan } from '../providers/types.ts';
import { isSystemRole, prefixReach, SYSTEM, TOOLS } from './prefix-length.ts';

/** Anthropic's limit on cache_control blocks in one request (more is a 400). */
export const MAX_BREAKPOINTS = 4;

export interface PlanInput {
  messages: readonly unknown[];
  tools: unknown;
  /** The smallest prefix worth a breakpoint, in tokens; undefined: place none (no target takes breakpoints). */
  minimum: number | undefined;
  /** The prompt_cache_key to send; undefined when the client set its own. */
  key: string | undefined;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const roleOf = (message: unknown) => (isObject(message) ? message['role'] : undefined);

/** The cache_control blocks the client placed itself: on tools and on content parts (the ones the Anthropic adapter carries over). */
function clientBreakpoints(messages: readonly unknown[], tools: unknown): number {
  let count = 0;
  if (Array.isArray(tools)) for (const tool of tools) if (isObject(tool) && isObject(tool['cache_control'])) count++;
  for (const message of messages) {
    const content = isObject(message) ? message['content'] : undefined;
    if (Array.isArray(content)) for (const part of content) if (isObject(part) && isObject(part['cache_control'])) count++;
  }
  return count;
}

/** Whether the client already marked the end of this message (its last content part). */
function markedByClient(message: unknown): boolean {
  const content = isObject(message) ? message['content'] : undefined;
  return Array.isArray(content) && isObject(content.at(-1)) && isObject((content.at(-1) as Json)['cache_control']);
}

/**
 * The two message breakpoints of an agent loop (Anthropic docs, "Prompt
 * caching", multi-turn conversations: mark the final block; the earlier
 * breakpoint still reads): `final`, the last message, so the next request,
 * which repeats everything up to here, reads it; `stable`, the last message
 * before the newest turn (the trailing run of user and tool messages, or of
 * assistant messages for a prefill), which the previous request wrote, so it
 * is read even when the newest turn holds more than the 20 blocks Anthropic
 * looks back from a breakpoint. System messages are skipped: Anthropic takes
 * them out of the conversation.
 */
export function conversationBreakpoints(messages: readonly unknown[]): { final: number | undefined; stable: number | undefined } {
  let final: number | undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (!isSystemRole(roleOf(messages[i]))) {
      final = i;
      break;
    }
  }
  if (final === undefined) return { final: undefined, stable: undefined };
  const side = (role: unknown) => (role === 'assistant' ? 'assistant' : 'user');
  const newest = side(roleOf(messages[final]));
  for (let i = final - 1; i >= 0; i--) {
    const role = roleOf(messages[i]);
    if (!isSystemRole(role) && side(role) !== newest) return { final, stable: i };
  }
  return { final, stable: undefined };
}

/**
 * Where the request's stable prefix ends, decided once on the OpenAI-shaped
 * request (each adapter applies it in its own wire format):
 * 1. the client's own cache_control blocks count against the 4 allowed;
 * 2. candidates: the final message, the end of the stable part, the system
 *    prompt, the tool definitions; one the client marked already is skipped;
 * 3. a candidate whose prefix (tools, system, messages up to it) is shorter
 *    than `minimum` tokens is dropped: the provider would not cache it;
 * 4. the rest, in that order of worth, up to the breakpoints left.
 * Undefined when there is nothing to place (no breakpoint and no key).
 */
export function planPromptCache(input: PlanInput): PromptCachePlan | undefined {
  const plan: PromptCachePlan = { breakpoints: { tools: false, system: false, messages: [] }, key: input.key };
  const { messages, tools, minimum } = input;
  let left = MAX_BREAKPOINTS - clientBreakpoints(messages, tools);
  if (minimum !== undefined && left > 0) {
    const reach = prefixReach(messages, tools, minimum);
    if (reach !== undefined) {
      const { final, stable } = conversationBreakpoints(messages);
      let lastSystem: number | undefined;
      for (let i = messages.length - 1; i >= 0 && lastSystem === undefined; i--) if (isSystemRole(roleOf(messages[i]))) lastSystem = i;
      const lastTool = Array.isArray(tools) ? tools.at(-1) : undefined;
      const take = (qualifies: boolean, marked: boolean, place: () => void) => {
        if (left > 0 && qualifies && !marked) {
          place();
          left--;
        }
      };
      for (const i of [final, stable]) {
        if (i !== undefined) take(i >= reach, markedByClient(messages[i]), () => plan.breakpoints.messages.unshift(i));
      }
      take(lastSystem !== undefined && reach <= SYSTEM, markedByClient(messages[lastSystem ?? -1]), () => {
        plan.breakpoints.system = true;
      });
      take(lastTool !== undefined && reach === TOOLS, isObject(lastTool) && isObject(lastTool['cache_control']), () => {
        plan.breakpoints.tools = true;
      });
    }
  }
  const b = plan.breakpoints;
  return b.tools || b.system || b.messages.length > 0 || plan.key !== undefined ? plan : undefined;
}
