import type { TokenUsage } from '../providers/types.ts';
import type { SurfaceName } from '../surfaces/surface.ts';
import { ANSWER_FORMAT_NAMES } from './answer-formats.ts';

/**
 * One stored answer, as both stores keep it (JSON). Either form answers
 * either kind of request: a streamed answer is stored chunk by chunk (each
 * chunk's data exactly as the client was sent it: tool-call deltas,
 * reasoning content, thinking signatures and every other field kept) and
 * replayed as chunks, or joined into a complete answer; a non-streamed one
 * is stored as sent and replayed as is, or cut into chunks (the surface's
 * AnswerFormat).
 */
export interface CachedAnswer {
  /** Format version of this record. */
  v: 1;
  /**
   * The surface whose answer this is (AnswerFormat.name); absent: Chat
   * Completions (entries written before Messages answers were cached, and
   * Chat Completions' own, which therefore stay as they were).
   */
  format?: SurfaceName;
  /** The provider that produced the answer (its id) and the model as that provider named it. */
  provider: string;
  model: string;
  /** Epoch ms. */
  createdAt: number;
  usage: TokenUsage | undefined;
  /** What the answer cost when it was made, at catalog prices (a hit saves it); undefined: the model has no price. */
  costUsd: number | undefined;
  /** A non-streamed answer: its JSON as sent (a chat.completion, a Messages message). */
  completion?: string;
  /** A streamed answer: each chunk's data in order, without the usage-only chunk and the terminal event. */
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
  if (a.format !== undefined && !ANSWER_FORMAT_NAMES.includes(a.format)) return undefined;
  return a as CachedAnswer;
}

/** The surface a stored answer belongs to. */
export function formatOf(answer: CachedAnswer): SurfaceName {
  return answer.format ?? 'chat.completions';
}

/** Tokens a reuse of the answer did not pay for: its prompt and completion tokens. */
export function tokensOf(answer: CachedAnswer): number {
  return answer.usage ? answer.usage.promptTokens + answer.usage.completionTokens : 0;
}
