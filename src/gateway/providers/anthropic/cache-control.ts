import { isObject, type JsonObject } from '../json.ts';
import type { PromptCachePlan } from '../types.ts';
import type { Turn } from './messages.ts';

/** At most this many cache_control blocks in one request (Anthropic answers more with a 400). */
const MAX_BREAKPOINTS = 4;
const EPHEMERAL = { type: 'ephemeral' } as const;

export interface TranslatedPrompt {
  tools: JsonObject[] | undefined;
  system: JsonObject[];
  turns: Turn[];
  /** Per OpenAI message, the last block it became (messages.ts). */
  ends: (JsonObject | undefined)[];
}

/** Every block in prompt order (tools, system, messages; a tool result's own content after it). */
function blocksInOrder(prompt: TranslatedPrompt): JsonObject[] {
  const out: JsonObject[] = [...(prompt.tools ?? []), ...prompt.system];
  for (const turn of prompt.turns) {
    for (const block of turn.content) {
      out.push(block);
      if (block['type'] === 'tool_result' && Array.isArray(block['content'])) for (const inner of block['content']) if (isObject(inner)) out.push(inner);
    }
  }
  return out;
}

/**
 * The prompt-cache stage's plan as Anthropic `cache_control` breakpoints
 * (Anthropic docs, "Prompt caching"), placed on the translated request:
 * after the message the plan names (its last block; for a message that
 * became no block, the one before it), after the system prompt, after the
 * tool definitions, most valuable first (the latest message first). The
 * client's own breakpoints stay as they are and count against the 4
 * allowed; a block the client marked is not marked again; and none is
 * placed before a client breakpoint with `ttl: "1h"`, as Anthropic requires
 * longer-lived breakpoints to come first.
 */
export function placeBreakpoints(prompt: TranslatedPrompt, plan: PromptCachePlan): void {
  const order = blocksInOrder(prompt);
  let left = MAX_BREAKPOINTS - order.filter((block) => isObject(block['cache_control'])).length;
  let lastLong = -1;
  order.forEach((block, i) => {
    const control = block['cache_control'];
    if (isObject(control) && control['ttl'] === '1h') lastLong = i;
  });
  const wanted: (JsonObject | undefined)[] = [];
  for (const index of [...plan.breakpoints.messages].sort((a, b) => b - a)) {
    let i = Math.min(index, prompt.ends.length - 1);
    while (i >= 0 && prompt.ends[i] === undefined) i--;
    wanted.push(prompt.ends[i]);
  }
  if (plan.breakpoints.system) wanted.push(prompt.system.at(-1));
  if (plan.breakpoints.tools) wanted.push(prompt.tools?.at(-1));
  for (const block of wanted) {
    if (left <= 0) return;
    if (block === undefined || isObject(block['cache_control']) || order.indexOf(block) <= lastLong) continue;
    block['cache_control'] = { ...EPHEMERAL };
    left--;
  }
}
