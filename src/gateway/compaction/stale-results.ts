/**
 * The `stale-results` strategy (agent and above): once the prompt passes
 * `triggerTokens`, the oldest tool results are replaced by a note naming
 * the call, so the model can call the tool again if it still needs them.
 * Never cleared: the `keepResults` most recent tool results, anything in the
 * latest exchange, and results under `MIN_STALE_CHARS` characters (the
 * note would save next to nothing).
 *
 * Batches, so that the providers' cached prefix breaks rarely and then by a
 * lot: the results worth clearing are grouped, in history order, into
 * blocks of at least `batchTokens` tokens (a block closes once it holds that
 * many; sizes are the client's messages' tokens, so a result's block
 * depends only on the history before it). Only closed blocks whose results
 * are all clearable are cleared, whole and from the oldest: the fewest that
 * bring the prompt to the trigger or under. Between two turns that clear as
 * many blocks, the same history compacts to the same bytes.
 */
export const MIN_STALE_CHARS = 200;

export interface StaleSettings {
  triggerTokens: number;
  keepResults: number;
  batchTokens: number;
}

export interface StaleCandidate {
  /** Output position of the result. */
  at: number;
  /** Tokens of the client's message (the block it falls in). */
  originalTokens: number;
}

/** The candidates grouped into blocks, and how many from the oldest may be cleared (closed, every result clearable). */
export function staleBlocks(candidates: readonly StaleCandidate[], batchTokens: number, clearableBefore: number): { blocks: StaleCandidate[][]; clearable: number } {
  const blocks: StaleCandidate[][] = [];
  let current: StaleCandidate[] = [];
  let tokens = 0;
  let closed = 0;
  for (const c of candidates) {
    current.push(c);
    tokens += c.originalTokens;
    if (tokens >= batchTokens) {
      blocks.push(current);
      current = [];
      tokens = 0;
      closed++;
    }
  }
  let clearable = 0;
  while (clearable < closed && blocks[clearable]!.at(-1)!.at < clearableBefore) clearable++;
  return { blocks, clearable };
}

/** The note a cleared result is replaced by. */
export function staleNote(id: unknown, name: string | undefined): string {
  const call = typeof id === 'string' && id.length <= 64 ? `${name !== undefined && name.length <= 64 ? `${name} ` : ''}call ${id}` : 'this tool call';
  return `[gateway: the result of ${call} was cleared to save context; call the tool again if it is needed]`;
}
