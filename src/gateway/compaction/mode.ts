/**
 * How much a call's prompt may be compacted (X-Gateway-Compact, a tenant's
 * `settings.compaction.default`, GATEWAY_COMPACT_DEFAULT):
 * - off: the body goes upstream exactly as the client sent it;
 * - safe: whitespace normalized, exact repeats replaced by a reference, and
 *   earlier results of a read superseded by a later one replaced by a
 *   reference to it (when that pays for the cache rewrite it causes);
 * - agent: safe, and past a prompt size the oldest tool results cleared in
 *   batches (the most recent ones kept);
 * - aggressive: agent, and long tool outputs cut to their head and tail;
 * - budget: aggressive, and the oldest middle turns dropped until the
 *   prompt (messages and tool definitions) fits this many tokens.
 */
export type CompactMode = { kind: 'off' } | { kind: 'safe' } | { kind: 'agent' } | { kind: 'aggressive' } | { kind: 'budget'; tokens: number };

/** Budgets from 100 to 99,999,999 tokens (the tenant setting's schema uses the same pattern). */
const BUDGET = /^[1-9][0-9]{2,7}$/;

export const COMPACT_MODE_TEXT = 'off, safe, agent, aggressive, or a token budget from 100 to 99999999';

const OFF: CompactMode = { kind: 'off' };
const SAFE: CompactMode = { kind: 'safe' };
const AGENT: CompactMode = { kind: 'agent' };
const AGGRESSIVE: CompactMode = { kind: 'aggressive' };

/** The mode a header or setting names (words in any case), or undefined when it names none. */
export function parseCompactMode(text: string): CompactMode | undefined {
  const value = text.trim().toLowerCase();
  if (value === 'off') return OFF;
  if (value === 'safe') return SAFE;
  if (value === 'agent') return AGENT;
  if (value === 'aggressive') return AGGRESSIVE;
  return BUDGET.test(value) ? { kind: 'budget', tokens: Number(value) } : undefined;
}

/** The mode as X-Gateway-Compact would name it. */
export function formatCompactMode(mode: CompactMode): string {
  return mode.kind === 'budget' ? String(mode.tokens) : mode.kind;
}

/** Modes in order: each includes what the ones before it do. */
const RANK = { off: 0, safe: 1, agent: 2, aggressive: 3, budget: 4 } as const;

/** True when `mode` includes what `least` does (agent includes safe, a budget includes everything). */
export function modeIncludes(mode: CompactMode, least: CompactMode['kind']): boolean {
  return RANK[mode.kind] >= RANK[least];
}
