import { groupUnits, latestExchangeStart, type Message, type Unit } from './messages.ts';

/**
 * The `drop-turns` strategy (under a token budget): the oldest middle units
 * (an assistant message with its tool results, or a single message) are
 * dropped, in blocks, until the prompt fits.
 *
 * Never dropped: system and developer messages, everything up to and
 * including the first user message, the latest user message, the last
 * unit, and the latest exchange (the last assistant message and everything
 * after it: what the model is answering now).
 *
 * Stable blocks: dropping exactly as much as needed would move the cut on
 * every turn, and with it the start of everything after the first user
 * message, so the providers' prompt caches would miss on every turn. The
 * units after the first user message are instead grouped by where they
 * start in the history, counted in tokens of their compacted form, into
 * blocks of a quarter of the budget (`floor(tokensBefore / blockTokens)`).
 * A unit's block depends only on what comes before it, so on the next
 * turn the blocks are the same; whole blocks are dropped from the oldest,
 * and the cut moves only when the history has grown by about a block. The
 * price: up to a block more is dropped than strictly needed, so a prompt
 * under budget uses 75 to 100% of it.
 */
export const BLOCK_FRACTION = 4;

export interface DropPlan {
  /** For each drop count d (0, 1, ...): the messages kept when the d oldest blocks are dropped. */
  keep(blocks: number): boolean[];
  /** How many blocks hold something that may be dropped. */
  blocks: number;
  /** Tokens the d oldest blocks' droppable units take (in the compacted form the sizes were given for). */
  droppedTokens(blocks: number): number;
}

export function planDrops(messages: readonly Message[], sizes: readonly number[], budget: number): DropPlan {
  const units = groupUnits(messages);
  const firstUser = messages.findIndex((m) => m.role === 'user');
  let latestUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user') {
      latestUser = i;
      break;
    }
  }
  const blockTokens = Math.max(1, Math.floor(budget / BLOCK_FRACTION));
  const latest = latestExchangeStart(messages);
  const isProtected = (unit: Unit, index: number): boolean => {
    if (index === units.length - 1 || unit.start <= firstUser || firstUser < 0 || unit.end > latest) return true;
    for (let i = unit.start; i < unit.end; i++) {
      const role = messages[i]!.role;
      if (role === 'system' || role === 'developer' || i === latestUser) return true;
    }
    return false;
  };
  // Each droppable unit's block, and the tokens each block may give up.
  const droppable: { unit: Unit; block: number }[] = [];
  const blockSizes: number[] = [];
  let before = 0;
  for (const [index, unit] of units.entries()) {
    let size = 0;
    for (let i = unit.start; i < unit.end; i++) size += sizes[i]!;
    if (unit.start > firstUser && firstUser >= 0) {
      const block = Math.floor(before / blockTokens);
      before += size;
      if (!isProtected(unit, index)) {
        droppable.push({ unit, block });
        blockSizes[block] = (blockSizes[block] ?? 0) + size;
      }
    }
  }
  const blocks = droppable.length === 0 ? 0 : droppable[droppable.length - 1]!.block + 1;
  // Tokens of the d oldest blocks, for every d: summed once (summed on each question, the planner's search took
  // time growing with the square of the blocks: 9 s for 160,000 messages).
  const droppedBefore = new Array<number>(blocks + 1);
  droppedBefore[0] = 0;
  for (let b = 0; b < blocks; b++) droppedBefore[b + 1] = droppedBefore[b]! + (blockSizes[b] ?? 0);
  return {
    blocks,
    keep(d) {
      const keep = new Array<boolean>(messages.length).fill(true);
      for (const { unit, block } of droppable) {
        if (block >= d) break;
        for (let i = unit.start; i < unit.end; i++) keep[i] = false;
      }
      return keep;
    },
    droppedTokens(d) {
      return droppedBefore[Math.max(0, Math.min(d, blocks))]!;
    },
  };
}
