import { planDrops } from './drop-turns.ts';
import type { Message } from './messages.ts';
import { type CompactMode, modeIncludes } from './mode.ts';
import { type RewriteOptions, type Rewritten, rewriteMessages, STRATEGIES } from './rewrite.ts';
import type { StaleSettings } from './stale-results.ts';
import type { PromptTokenCounter } from './token-counts.ts';
import { DEFAULT_READ_TOOLS, STALE_DEFAULTS } from '../settings/compaction.ts';

/** A tenant's knobs for the strategies (src/gateway/settings/compaction.ts), defaults filled in. */
export interface CompactOptions {
  readTools: ReadonlySet<string>;
  stale: StaleSettings;
}

export const DEFAULT_COMPACT_OPTIONS: CompactOptions = { readTools: new Set(DEFAULT_READ_TOOLS), stale: { ...STALE_DEFAULTS } };

export interface Compacted {
  /** The messages to send (the input array itself when nothing changed). */
  messages: Message[];
  /** For each output message, the index of the input message it comes from. */
  origin: number[];
  /** The strategies that changed something, in order ("none" when empty). */
  applied: string[];
  /** For each output message, the strategies that changed it (undefined: sent as the client wrote it). */
  changedBy: readonly (readonly string[] | undefined)[];
  /** countPromptTokens before minus after (0 when nothing changed). */
  savedTokens: number;
  /** Under a budget: the prompt's tokens as sent (undefined in other modes). */
  promptTokens: number | undefined;
  /** Under a budget that cannot be met: the smallest prompt reachable, in tokens. */
  unmet: number | undefined;
  /** Under a budget: how many blocks of old turns were dropped (drop-turns.ts). */
  droppedBlocks: number;
  /** Agent and above: how many blocks of stale tool results were cleared (stale-results.ts). */
  clearedBlocks: number;
}

/** The strategies a mode runs, as rewriteMessages takes them (what the walk needs to count with included). */
export function rewriteOptionsFor(mode: Exclude<CompactMode, { kind: 'off' }>, tools: unknown, counter: PromptTokenCounter, options: CompactOptions): RewriteOptions {
  return {
    cutToolOutputs: modeIncludes(mode, 'aggressive'),
    reads: { tools: options.readTools, counter },
    stale: modeIncludes(mode, 'agent') ? { ...options.stale, counter, toolTokens: counter.tools(tools) } : undefined,
  };
}

/**
 * Compacts a chat request's messages in a mode other than `off`: the
 * per-message strategies (rewrite.ts; stale results cleared in agent mode
 * and above), and under a budget whole blocks of
 * the oldest middle turns dropped (drop-turns.ts) until the prompt,
 * tool definitions included, fits. Messages are never modified in place.
 */
export function compactMessages(
  messages: Message[],
  tools: unknown,
  mode: Exclude<CompactMode, { kind: 'off' }>,
  counter: PromptTokenCounter,
  options: CompactOptions = DEFAULT_COMPACT_OPTIONS,
): Compacted {
  const rewrite = rewriteOptionsFor(mode, tools, counter, options);
  let result = rewriteMessages(messages, rewrite);
  let promptTokens: number | undefined;
  let unmet: number | undefined;
  let dropped = 0;
  if (mode.kind === 'budget') {
    const toolTokens = counter.tools(tools);
    promptTokens = counter.prompt(result.messages, undefined) + toolTokens;
    if (promptTokens > mode.tokens) {
      const sizes = result.messages.map((m) => counter.message(m));
      const plan = planDrops(messages, sizes, mode.tokens);
      // Dropping can only bring repeats' first copies back (a reference to a dropped copy becomes the text
      // again), never shrink below the estimate: start from the fewest blocks that could fit, go on from there.
      // (droppedTokens answers at once: summed on each question, this search grew with the square of the blocks.)
      let d = 1;
      while (d < plan.blocks && promptTokens - plan.droppedTokens(d) > mode.tokens) d++;
      for (; d <= plan.blocks; d++) {
        const attempt = rewriteMessages(messages, { ...rewrite, keep: plan.keep(d) });
        const tokens = counter.prompt(attempt.messages, undefined) + toolTokens;
        if (attempt.origin.length < messages.length) attempt.applied.add('drop-turns');
        result = attempt;
        promptTokens = tokens;
        dropped = d;
        if (tokens <= mode.tokens) break;
      }
      if (promptTokens > mode.tokens) unmet = promptTokens;
    }
  }
  return { ...finish(messages, result, counter), promptTokens, unmet, droppedBlocks: dropped, clearedBlocks: result.clearedBlocks };
}

function finish(
  messages: Message[],
  result: Rewritten,
  counter: PromptTokenCounter,
): Pick<Compacted, 'messages' | 'origin' | 'applied' | 'changedBy' | 'savedTokens'> {
  const applied = STRATEGIES.filter((s) => result.applied.has(s));
  if (applied.length === 0) return { messages, origin: result.origin, applied, changedBy: [], savedTokens: 0 };
  return {
    messages: result.messages,
    origin: result.origin,
    applied,
    changedBy: result.changedBy,
    savedTokens: savedTokens(messages, result.messages, result.origin, counter),
  };
}

/**
 * The prompt tokens a compacted prompt (`sent`, each message from the
 * client's `origin[k]`) removed: only what changed is counted, before and
 * after, which is the difference of countPromptTokens exactly, since it is a
 * sum over messages.
 */
export function savedTokens(messages: readonly unknown[], sent: readonly unknown[], origin: readonly number[], counter: PromptTokenCounter): number {
  let saved = 0;
  let next = 0;
  for (const [i, message] of messages.entries()) {
    if (origin[next] !== i) {
      saved += counter.message(message);
      continue;
    }
    const out = sent[next++]!;
    if (out !== message) saved += counter.message(message) - counter.message(out);
  }
  return saved;
}
