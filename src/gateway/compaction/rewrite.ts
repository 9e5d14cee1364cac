import {
  isRewritable,
  isToolResult,
  latestExchangeStart,
  type Message,
  mapText,
  noteContent,
  textChars,
  textOf,
  toolCallArguments,
  toolCallNames,
} from './messages.ts';
import { RepeatIndex } from './repeats.ts';
import { MIN_STALE_CHARS, type StaleCandidate, type StaleSettings, staleBlocks, staleNote } from './stale-results.ts';
import { pays, readKey, SupersededReads } from './superseded-reads.ts';
import type { PromptTokenCounter } from './token-counts.ts';
import { cutToolOutput } from './tool-output.ts';
import { normalizeWhitespace } from './whitespace.ts';

/** The strategies' names as X-Gateway-Compaction lists them, in the order they run. */
export const STRATEGIES = ['whitespace', 'repeats', 'superseded-reads', 'stale-results', 'tool-output', 'drop-turns'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export interface Rewritten {
  messages: Message[];
  /** For each output message, the index of the input message it comes from (increasing). */
  origin: number[];
  applied: Set<Strategy>;
  /** How many blocks of stale results were cleared (stale-results.ts). */
  clearedBlocks: number;
  /** For each output message, the strategies that changed it, in order (undefined: unchanged). */
  changedBy: (Strategy[] | undefined)[];
}

/**
 * The per-message strategies over the kept messages, in order. A message's
 * rewritten form depends only on the kept messages up to the point where it
 * is decided (the repeat index and the reads are filled as the walk goes),
 * never on the prompt's length, with two exceptions that are the point of
 * their strategies: a read superseded by a later one, and stale results
 * cleared in whole blocks. So the same history rewrites to the same bytes on
 * every later turn, and the providers' prompt caches keep hitting.
 * The latest exchange (the last assistant message and what follows) gets
 * only its whitespace normalized. Untouched messages are passed through as
 * the same objects.
 */
export interface RewriteOptions {
  cutToolOutputs: boolean;
  /** The messages to keep (all when absent): drop-turns' choice. */
  keep?: readonly boolean[];
  /** Turn one strategy off (the benchmark measures each alone); both on unless false. */
  whitespace?: boolean;
  repeats?: boolean;
  /** superseded-reads: the read tools, and the counter its cost rule counts with (absent: off). */
  reads?: { tools: ReadonlySet<string>; counter: PromptTokenCounter };
  /** stale-results (absent: off); `toolTokens` are the tool definitions' tokens, part of the prompt. */
  stale?: StaleSettings & { counter: PromptTokenCounter; toolTokens: number };
}

/** How a message's content was replaced (undefined: whitespace at most). */
type Replaced = 'repeats' | 'superseded-reads' | 'stale-results';

export function rewriteMessages(messages: readonly Message[], options: RewriteOptions): Rewritten {
  const kept: Message[] = [];
  const origin: number[] = [];
  for (let i = 0; i < messages.length; i++) {
    if (options.keep && !options.keep[i]) continue;
    kept.push(messages[i]!);
    origin.push(i);
  }
  const latest = latestExchangeStart(kept);
  const out: Message[] = [];
  const replaced: (Replaced | undefined)[] = [];
  const applied = new Set<Strategy>();
  const changedBy: (Strategy[] | undefined)[] = [];
  const changed = (k: number, strategy: Strategy) => {
    applied.add(strategy);
    const list = changedBy[k];
    if (list === undefined) changedBy[k] = [strategy];
    else list.push(strategy);
  };
  const repeats = new RepeatIndex();
  const toolNames = new Map<string, string>();
  const calls = new Map<string, { name: string; args: unknown }>();
  const reads = options.reads && new ReadsWalk(kept, options.reads.tools, options.reads.counter);
  for (let k = 0; k < kept.length; k++) {
    const message = kept[k]!;
    toolCallNames(message, toolNames);
    toolCallArguments(message, calls);
    reads?.noteCalls(message, k);
    if (!isRewritable(message) || message.content == null) {
      repeats.seen(textOf(message.content), message, toolNames);
      out.push(message);
      replaced.push(undefined);
      continue;
    }
    const normalized = options.whitespace === false ? message.content : mapText(message.content, normalizeWhitespace);
    const text = textOf(normalized);
    const reference = options.repeats === false ? undefined : repeats.seen(text, message, toolNames);
    let content = normalized;
    if (reference !== undefined && k < latest) {
      content = noteContent(normalized, reference);
      replaced.push('repeats');
      changed(k, 'repeats');
    } else {
      replaced.push(undefined);
      if (normalized !== message.content) changed(k, 'whitespace');
    }
    out.push(content === message.content ? message : { ...message, content });
    if (reads && text !== undefined && isToolResult(message)) {
      const id = message.tool_call_id;
      const call = typeof id === 'string' ? calls.get(id) : undefined;
      if (call !== undefined && reads.tools.has(call.name)) {
        for (const at of reads.arrive(k, text, call, String(id), reference === undefined, repeats, out)) {
          if (at >= latest) continue; // decided, but the latest exchange is never changed: applied from the next turn on
          out[at] = { ...out[at]!, content: noteContent(out[at]!.content, reads.noteFor(String(id), call.name)) };
          replaced[at] = 'superseded-reads';
          changed(at, 'superseded-reads');
        }
      }
    }
  }
  const clearedBlocks = options.stale ? clearStaleResults(kept, out, replaced, latest, toolNames, options.stale) : 0;
  if (clearedBlocks > 0) for (let k = 0; k < replaced.length; k++) if (replaced[k] === 'stale-results') changed(k, 'stale-results');
  if (options.cutToolOutputs) {
    for (let k = 0; k < latest; k++) {
      const message = out[k]!;
      if (replaced[k] !== undefined || !isToolResult(message) || message.content == null) continue;
      const content = mapText(message.content, cutToolOutput);
      if (content === message.content) continue;
      out[k] = { ...message, content };
      changed(k, 'tool-output');
    }
  }
  return { messages: out, origin, applied, clearedBlocks, changedBy };
}

/** superseded-reads inside the walk: where each call is, the client's messages' tokens up to each point, and the reads seen. */
class ReadsWalk {
  readonly tools: ReadonlySet<string>;
  readonly #messages: readonly Message[];
  readonly #counter: PromptTokenCounter;
  readonly #reads = new SupersededReads();
  /** Output position of the assistant message holding each call. */
  readonly #callAt = new Map<string, number>();
  /** before[k]: tokens of the client's messages 0..k-1, filled as far as asked. */
  readonly #before: number[] = [0];

  constructor(messages: readonly Message[], tools: ReadonlySet<string>, counter: PromptTokenCounter) {
    this.#messages = messages;
    this.tools = tools;
    this.#counter = counter;
  }

  noteCalls(message: Message, k: number): void {
    if (message.role !== 'assistant' || !Array.isArray(message.tool_calls)) return;
    for (const call of message.tool_calls) {
      const id = (call as { id?: unknown } | null)?.id;
      if (typeof id === 'string') this.#callAt.set(id, k);
    }
  }

  noteFor(id: string, name: string): string {
    const call = id.length <= 64 && name.length <= 64 ? `${name} call ${id}` : 'read';
    return `[gateway: superseded by the later ${call} below; removed]`;
  }

  /** The output positions of the earlier results this read supersedes and that pay (superseded-reads.ts). */
  arrive(k: number, text: string, call: { name: string; args: unknown }, id: string, register: boolean, repeats: RepeatIndex, out: readonly Message[]): number[] {
    if (!register) return []; // a copy of an earlier text: repeats removes it, it supersedes nothing
    const superseded = this.#reads.arrive({ at: k, text, key: readKey(call.name, call.args) }, true);
    const callAt = this.#callAt.get(id) ?? k;
    const paying: number[] = [];
    for (const s of superseded) {
      if (repeats.copied(s.text)) continue; // a later copy points at it
      const note = this.noteFor(id, call.name);
      const before = out[s.at]!;
      const size = this.#counter.message(before);
      const noteTokens = this.#counter.message({ ...before, content: noteContent(before.content, note) });
      // Rewritten: what follows the superseded result up to the superseding call; when both came in one exchange
      // (parallel calls), the result is changed on the next turn, and what follows it up to the superseding result is.
      const until = callAt > s.at ? callAt : k + 1;
      const between = this.#tokensBefore(until) - this.#tokensBefore(s.at + 1);
      if (!pays(size - noteTokens, between, noteTokens)) continue;
      repeats.forget(s.text);
      paying.push(s.at);
    }
    return paying;
  }

  #tokensBefore(k: number): number {
    while (this.#before.length <= k) {
      const n = this.#before.length;
      this.#before.push(this.#before[n - 1]! + this.#counter.message(this.#messages[n - 1]));
    }
    return this.#before[k]!;
  }
}

/** stale-results over the walk's output: the blocks to clear, applied in place; returns how many. */
function clearStaleResults(
  kept: readonly Message[],
  out: Message[],
  replaced: (Replaced | undefined)[],
  latest: number,
  toolNames: ReadonlyMap<string, string>,
  stale: NonNullable<RewriteOptions['stale']>,
): number {
  const { counter } = stale;
  const results: number[] = [];
  for (let k = 0; k < kept.length; k++) if (isToolResult(kept[k]!)) results.push(k);
  // Clearable: before the latest exchange and older than the most recent `keepResults` results.
  const recent = results.length - stale.keepResults;
  const clearableBefore = Math.min(latest, recent <= 0 ? 0 : recent < results.length ? results[recent]! : kept.length);
  if (clearableBefore === 0) return 0;
  // Measured on the client's messages, which only grow from turn to turn, so the number of blocks cleared never goes
  // down (measured on the compacted prompt, it could: the previous latest exchange compacted next turn shrinks it, and a
  // block cleared last turn would come back, breaking the cached prefix twice).
  let prompt = counter.prompt(kept, undefined) + stale.toolTokens;
  if (prompt <= stale.triggerTokens) return 0;
  const candidates: StaleCandidate[] = [];
  for (const k of results) {
    if (textChars(kept[k]!.content) >= MIN_STALE_CHARS) candidates.push({ at: k, originalTokens: counter.message(kept[k]) });
  }
  const { blocks, clearable } = staleBlocks(candidates, stale.batchTokens, clearableBefore);
  let cleared = 0;
  const notes = new Map<number, Message>();
  while (cleared < clearable && prompt > stale.triggerTokens) {
    for (const { at } of blocks[cleared]!) {
      const message = out[at]!;
      const id = message.tool_call_id;
      const note = { ...message, content: noteContent(message.content, staleNote(id, typeof id === 'string' ? toolNames.get(id) : undefined)) };
      prompt -= counter.message(kept[at]) - counter.message(note);
      if (replaced[at] !== undefined) continue; // already a short reference
      notes.set(at, note);
    }
    cleared++;
  }
  for (const [at, note] of notes) {
    out[at] = note;
    replaced[at] = 'stale-results';
  }
  return notes.size > 0 ? cleared : 0;
}
