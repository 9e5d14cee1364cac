import type { AnswerFormat } from '../cache/answer-formats.ts';
import type { Call, CallTarget } from '../pipeline/call.ts';
import type { PromptCachePlan, ProviderAdapter } from '../providers/types.ts';

/** The inbound APIs the gateway serves, as usage records name them. */
export type SurfaceName = 'chat.completions' | 'messages' | 'responses' | 'embeddings';

/**
 * An inbound surface: one front door of the data plane, as a provider
 * adapter is one back door (providers/). Its route decodes the client's
 * request into the call the stages work on (`call.body`, in Chat
 * Completions form: the stages see one form); the surface then says, per
 * upstream target, which adapter makes the request and turns the answer,
 * its stream and its errors into the surface's own shape. Chat Completions
 * uses the provider's adapter as it is; Messages passes its client's request
 * through to an Anthropic upstream untouched, and translates both ways for
 * any other (surfaces/messages/).
 */
export interface Surface {
  readonly name: SurfaceName;
  /** The client's request in its own format, when that is not the stages' form (what stored bodies keep). */
  readonly request?: Record<string, unknown>;
  /** The request in the surface's format as compaction left it (the gateway's own breakpoints aside): what the response cache keys on. */
  sent?(): Record<string, unknown>;
  /**
   * The stages that change the request or replay answers, and whether they
   * know this surface's content yet: a stage that does not leaves the call
   * as it is (compaction: "none", no prompt-cache plan, cache and dedup
   * bypassed), so nothing is claimed for work that did not reach the wire.
   */
  readonly stages: { readonly compaction: boolean; readonly promptCache: boolean; readonly cache: boolean };
  /**
   * Compaction changed the stages' messages (`sent`, each from the client's
   * message `origin[k]`): the surface writes the change into its own request
   * and answers the messages and origin that match what it will now send,
   * with the client's message put back wherever a change cannot be carried.
   * Absent: the stages' form is what is sent.
   */
  compacted?(sent: { messages: readonly unknown[]; origin: readonly number[] }): { messages: unknown[]; origin: number[] };
  /**
   * A session the request itself names, for prompt caching when the client
   * sent no session header: a Responses chain's first response id, so that
   * every turn of a conversation sends one prompt_cache_key.
   */
  readonly promptCacheSession?: string | undefined;
  /** The prompt-cache plan narrowed to the breakpoints the surface will place in its own request (absent: all of them). */
  promptCachePlan?(plan: PromptCachePlan): PromptCachePlan | undefined;
  /** Its answers as the response cache and dedup store, share and replay them (cache/answer-formats.ts). */
  readonly answers: AnswerFormat;
  /** Flags the usage record adds to its own (`usage_flags`, comma-separated): what this call's translation changed, e.g. `reasoning_dropped`. */
  flags?(): string | undefined;
  /** Runs once the pipeline answered the call, before a complete answer is written (Responses: stores the response). */
  finish?(call: Call): Promise<void> | void;
  /**
   * The complete answer as bytes, when the surface makes it so instead of
   * `call.result` (embeddings: half a megabyte of vectors costs less as one
   * Buffer than as one string); absent or undefined: `call.result`.
   */
  answerBody?(): Buffer | undefined;
  /** The adapter one attempt at `target` goes through (it may add reply headers to `call`: what a translation left out). */
  adapter(target: CallTarget, call: Call): ProviderAdapter;
}
