import { MAX_BREAKPOINTS } from '../../prompt-cache/plan.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import type { PromptCachePlan } from '../../providers/types.ts';
import { holdsThinking } from './compacted.ts';
import { type ChatOrigin, TOP_SYSTEM } from './stages-form.ts';

const EPHEMERAL = { type: 'ephemeral' } as const;

/** A block a breakpoint may go on: in `tools`, `system` or message `message`'s content, at `block`; `at` its place in prompt order. */
interface Spot {
  where: 'tools' | 'system' | 'message';
  message: number;
  block: number;
  at: number;
}

/** What the body already holds: the client's breakpoints, the last one with a 1-hour TTL, and where each message's blocks start. */
interface Layout {
  marks: number;
  lastLong: number;
  tools: number;
  system: number;
  starts: number[];
}

const blocksOf = (content: unknown): unknown[] => (Array.isArray(content) ? content : [content]);

function layout(body: JsonObject): Layout {
  const out: Layout = { marks: 0, lastLong: -1, tools: 0, system: 0, starts: [] };
  let at = 0;
  const see = (block: unknown) => {
    if (!isObject(block)) return;
    const control = block['cache_control'];
    if (isObject(control)) {
      out.marks++;
      if (control['ttl'] === '1h') out.lastLong = at;
    }
    // A tool result's own blocks sit at its place.
    if (block['type'] === 'tool_result' && Array.isArray(block['content'])) for (const inner of block['content']) see(inner);
  };
  const tools = Array.isArray(body['tools']) ? body['tools'] : [];
  for (const tool of tools) {
    see(tool);
    at++;
  }
  out.tools = at;
  if (body['system'] !== undefined && body['system'] !== null) {
    for (const block of blocksOf(body['system'])) {
      see(block);
      at++;
    }
  }
  out.system = at;
  const messages = Array.isArray(body['messages']) ? body['messages'] : [];
  for (const message of messages) {
    out.starts.push(at);
    for (const block of blocksOf(isObject(message) ? message['content'] : undefined)) {
      see(block);
      at++;
    }
  }
  return out;
}

/** Where "after chat message i" is in the body (its last block), or undefined. */
function messageSpot(origin: ChatOrigin | undefined, l: Layout): Spot | undefined {
  if (origin === undefined || origin.end < 0) return undefined;
  if (origin.message === TOP_SYSTEM) return { where: 'system', message: TOP_SYSTEM, block: origin.end, at: l.tools + origin.end };
  return { where: 'message', message: origin.message, block: origin.end, at: (l.starts[origin.message] ?? 0) + origin.end };
}

/** The block at a spot (a string content is its one block). */
function blockAt(body: JsonObject, spot: Spot): unknown {
  if (spot.where === 'tools') return (body['tools'] as unknown[])[spot.block];
  const content = spot.where === 'system' ? body['system'] : ((body['messages'] as unknown[])[spot.message] as JsonObject)['content'];
  return typeof content === 'string' ? (spot.block === 0 ? { type: 'text', text: content } : undefined) : blocksOf(content)[spot.block];
}

/**
 * The plan's breakpoints as spots in the body, in order of worth (the
 * latest message first, then the system prompt, then the tools), keeping
 * only those Anthropic will take and that change nothing of the client's:
 * - at most 4 cache_control blocks in all, the client's counted first;
 * - none on a block the client marked (or in a tool result it marked
 *   inside), nor in an assistant message holding thinking blocks;
 * - none before a block the client marked with `ttl: "1h"`: Anthropic
 *   requires longer-lived breakpoints to come first, and the gateway's are
 *   5-minute ones.
 */
function spots(body: JsonObject, chat: readonly unknown[], provenance: readonly ChatOrigin[], plan: PromptCachePlan): { spots: Spot[]; messages: number[]; system: boolean; tools: boolean } {
  const l = layout(body);
  let left = MAX_BREAKPOINTS - l.marks;
  const out = { spots: [] as Spot[], messages: [] as number[], system: false, tools: false };
  const taken = new Set<number>();
  const take = (spot: Spot | undefined): boolean => {
    if (left <= 0 || spot === undefined || spot.at <= l.lastLong || taken.has(spot.at)) return false;
    const block = blockAt(body, spot);
    if (!isObject(block) || isObject(block['cache_control'])) return false;
    if (block['type'] === 'tool_result' && Array.isArray(block['content']) && block['content'].some((b) => isObject(b) && isObject(b['cache_control']))) return false;
    if (spot.where === 'message' && holdsThinking((body['messages'] as unknown[])[spot.message])) return false;
    taken.add(spot.at);
    out.spots.push(spot);
    left--;
    return true;
  };
  for (const i of [...plan.breakpoints.messages].sort((a, b) => b - a)) {
    if (take(messageSpot(provenance[i], l))) out.messages.unshift(i);
  }
  if (plan.breakpoints.system) {
    let last = -1;
    for (let i = 0; i < chat.length; i++) if (isObject(chat[i]) && (chat[i] as JsonObject)['role'] === 'system') last = i;
    out.system = take(messageSpot(provenance[last], l));
  }
  if (plan.breakpoints.tools && l.tools > 0) out.tools = take({ where: 'tools', message: -1, block: l.tools - 1, at: l.tools - 1 });
  return out;
}

/** The plan narrowed to the breakpoints that will be placed in this body (undefined: nothing left to do). */
export function placeablePlan(body: JsonObject, chat: readonly unknown[], provenance: readonly ChatOrigin[], plan: PromptCachePlan): PromptCachePlan | undefined {
  const kept = spots(body, chat, provenance, plan);
  const out: PromptCachePlan = { breakpoints: { tools: kept.tools, system: kept.system, messages: kept.messages }, key: plan.key };
  return kept.spots.length > 0 || plan.key !== undefined ? out : undefined;
}

/**
 * The body with `cache_control: {type: "ephemeral"}` on the blocks where
 * the plan (narrowed by placeablePlan) puts a breakpoint: copies of the
 * blocks, messages and lists touched, every other object the client's own;
 * a string content becomes its one text block to carry the mark.
 */
export function withBreakpoints(body: JsonObject, chat: readonly unknown[], provenance: readonly ChatOrigin[], plan: PromptCachePlan): JsonObject {
  const { spots: found } = spots(body, chat, provenance, plan);
  if (found.length === 0) return body;
  const out: JsonObject = { ...body };
  const mark = (content: unknown, j: number): unknown[] => {
    const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : (content as unknown[]).slice();
    blocks[j] = { ...(blocks[j] as JsonObject), cache_control: { ...EPHEMERAL } };
    return blocks;
  };
  for (const spot of found) {
    if (spot.where === 'tools') out['tools'] = mark(out['tools'], spot.block);
    else if (spot.where === 'system') out['system'] = mark(out['system'], spot.block);
    else {
      if (out['messages'] === body['messages']) out['messages'] = (body['messages'] as unknown[]).slice();
      const messages = out['messages'] as JsonObject[];
      messages[spot.message] = { ...messages[spot.message], content: mark(messages[spot.message]!['content'], spot.block) };
    }
  }
  return out;
}
