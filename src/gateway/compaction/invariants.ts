import { isDeepStrictEqual } from 'node:util';
import { hasSubstance, isRewritable, latestExchangeStart, type Message, mapText, toolCallIds } from './messages.ts';
import type { CompactMode } from './mode.ts';
import { normalizeWhitespace } from './whitespace.ts';

export interface CompactionCase {
  mode: CompactMode;
  before: { messages: readonly Message[]; tools: unknown };
  after: { messages: readonly Message[]; tools: unknown };
  /** For each message sent, the index of the client's message it comes from. */
  origin: readonly number[];
  /** Under a budget: the prompt's tokens as sent (countPromptTokens), unless the call was refused as unreachable. */
  promptTokens?: number;
  unreachable?: boolean;
}

/**
 * Every promise compaction makes, whatever the mode, checked on one
 * request: the tests' properties and the benchmark run it on every item.
 * Returns what is broken (empty when nothing is).
 */
export function compactionProblems(c: CompactionCase): string[] {
  const problems: string[] = [];
  const { messages } = c.before;
  const sent = c.after.messages;
  if (c.mode.kind === 'off' && sent !== messages) problems.push('off changed the messages');
  if (!isDeepStrictEqual(c.after.tools, c.before.tools)) problems.push('the tool definitions changed');
  if (c.origin.length !== sent.length) problems.push('origin does not map every message sent');
  for (let k = 1; k < c.origin.length; k++) if (c.origin[k]! <= c.origin[k - 1]!) problems.push(`message ${k} is out of order`);

  const kept = new Set(c.origin);
  const firstUser = messages.findIndex((m) => m.role === 'user');
  const latestUser = messages.findLastIndex((m) => m.role === 'user');
  for (const [i, m] of messages.entries()) {
    const mustKeep = m.role === 'system' || m.role === 'developer' || i <= firstUser || i === latestUser;
    if (mustKeep && !kept.has(i)) problems.push(`message ${i} (${m.role}) was dropped`);
  }
  // The latest exchange reaches the provider whole, whitespace normalization aside.
  const latest = latestExchangeStart(messages);
  for (let i = latest; i < messages.length; i++) if (!kept.has(i)) problems.push(`message ${i} (the latest exchange) was dropped`);
  for (const [k, out] of sent.entries()) {
    const i = c.origin[k]!;
    const m = messages[i];
    if (m === undefined) continue;
    if (i >= latest && !isDeepStrictEqual(out.content, m.content) && !isDeepStrictEqual(out.content, mapText(m.content, normalizeWhitespace))) {
      problems.push(`message ${i} (the latest exchange) was changed beyond its whitespace`);
    }
    const { content: _a, ...rest } = out;
    const { content: _b, ...restBefore } = m;
    if (!isDeepStrictEqual(rest, restBefore)) problems.push(`message ${i}: a field other than content changed`);
    if (!isRewritable(m) && !isDeepStrictEqual(out.content, m.content)) problems.push(`message ${i} (${m.role}) was changed`);
    if (hasSubstance(m.content) && !hasSubstance(out.content)) problems.push(`message ${i} was emptied`);
    const callsBefore: unknown[] = Array.isArray(m.tool_calls) ? m.tool_calls : [];
    const callsAfter: unknown[] = Array.isArray(out.tool_calls) ? out.tool_calls : [];
    for (const [j, call] of callsBefore.entries()) {
      if (argumentsAreJson(call) && !argumentsAreJson(callsAfter[j])) problems.push(`message ${i}: tool call ${j}'s arguments are no longer JSON`);
    }
  }
  problems.push(...pairingProblems(messages, kept));
  if (c.mode.kind === 'budget' && !c.unreachable && (c.promptTokens === undefined || c.promptTokens > c.mode.tokens)) {
    problems.push(`the prompt (${c.promptTokens} tokens) is over the budget of ${c.mode.tokens}`);
  }
  return problems;
}

/** Every tool call kept keeps its results, every result kept keeps its call (order follows from origin increasing). */
function pairingProblems(messages: readonly Message[], kept: ReadonlySet<number>): string[] {
  const problems: string[] = [];
  const callAt = new Map<string, number>();
  for (const [i, m] of messages.entries()) for (const id of toolCallIds(m)) callAt.set(id, i);
  for (const [i, m] of messages.entries()) {
    const id = m.tool_call_id;
    if (m.role !== 'tool' || typeof id !== 'string') continue;
    const call = callAt.get(id);
    if (call === undefined || call > i) continue; // an orphan in the request itself
    if (kept.has(call) !== kept.has(i)) problems.push(`tool call ${id}: ${kept.has(i) ? 'its call' : 'its result'} was dropped`);
  }
  return problems;
}

function argumentsAreJson(call: unknown): boolean {
  const args = (call as { function?: { arguments?: unknown } } | null | undefined)?.function?.arguments;
  if (typeof args !== 'string') return false;
  try {
    JSON.parse(args);
    return true;
  } catch {
    return false;
  }
}
