import type { TokenUsage } from '../providers/types.ts';

/**
 * One stored answer, as both stores keep it (JSON). Either form answers
 * either kind of request: a streamed answer is stored chunk by chunk (each
 * chunk's data exactly as the client was sent it: tool-call deltas,
 * reasoning content and every other field kept) and replayed as chunks, or
 * joined into a chat.completion; a non-streamed one is stored as sent and
 * replayed as is, or cut into chunks (answer-format.ts).
 */
export interface CachedAnswer {
  /** Format version of this record. */
  v: 1;
  /** The provider that produced the answer (its id) and the model as that provider named it. */
  provider: string;
  model: string;
  /** Epoch ms. */
  createdAt: number;
  usage: TokenUsage | undefined;
  /** What the answer cost when it was made, at catalog prices (a hit saves it); undefined: the model has no price. */
  costUsd: number | undefined;
  /** A non-streamed answer: the chat.completion JSON as sent. */
  completion?: string;
  /** A streamed answer: each chat.completion.chunk's data in order, without the usage-only chunk and [DONE]. */
  chunks?: string[];
  /** The usage-only chunk's data, when the stream reported usage. */
  usageChunk?: string;
}

/** The record as stored, or undefined for text that is not one (another version, or damaged). */
export function parseCachedAnswer(text: string): CachedAnswer | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const a = value as Partial<CachedAnswer> | null;
  if (a === null || typeof a !== 'object' || a.v !== 1 || typeof a.provider !== 'string' || typeof a.model !== 'string') return undefined;
  if (typeof a.createdAt !== 'number' || (typeof a.completion !== 'string' && !Array.isArray(a.chunks))) return undefined;
  return a as CachedAnswer;
}

/** Tokens a reuse of the answer did not pay for: its prompt and completion tokens. */
export function tokensOf(answer: CachedAnswer): number {
  return answer.usage ? answer.usage.promptTokens + answer.usage.completionTokens : 0;
}
