import { isRewritable, isToolResult, type Message, mapText, textOf, toolCallNames } from './messages.ts';
import { RepeatIndex } from './repeats.ts';
import { cutToolOutput } from './tool-output.ts';
import { normalizeWhitespace } from './whitespace.ts';

/** The strategies' names as X-Gateway-Compaction lists them, in the order they run. */
export const STRATEGIES = ['whitespace', 'repeats', 'tool-output', 'drop-turns'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export interface Rewritten {
  messages: Message[];
  /** For each output message, the index of the input message it comes from (increasing). */
  origin: number[];
  applied: Set<Strategy>;
}

/**
 * The per-message strategies over the kept messages, in order. A message's
 * rewritten form depends only on itself and the kept messages before it
 * (the repeat index is filled as the walk goes), never on what follows or
 * on the prompt's length: so the same history rewrites to the same bytes on
 * every later turn, and the providers' prompt caches keep hitting.
 * Untouched messages are passed through as the same objects.
 */
export interface RewriteOptions {
  cutToolOutputs: boolean;
  /** The messages to keep (all when absent): drop-turns' choice. */
  keep?: readonly boolean[];
  /** Turn one strategy off (the benchmark measures each alone); both on unless false. */
  whitespace?: boolean;
  repeats?: boolean;
}

export function rewriteMessages(messages: readonly Message[], options: RewriteOptions): Rewritten {
  const out: Message[] = [];
  const origin: number[] = [];
  const applied = new Set<Strategy>();
  const repeats = new RepeatIndex();
  const toolNames = new Map<string, string>();
  for (let i = 0; i < messages.length; i++) {
    if (options.keep && !options.keep[i]) continue;
    const message = messages[i]!;
    toolCallNames(message, toolNames);
    origin.push(i);
    if (!isRewritable(message) || message.content == null) {
      repeats.seen(textOf(message.content), message, toolNames);
      out.push(message);
      continue;
    }
    const normalized = options.whitespace === false ? message.content : mapText(message.content, normalizeWhitespace);
    const reference = options.repeats === false ? undefined : repeats.seen(textOf(normalized), message, toolNames);
    let content = normalized;
    if (reference !== undefined) {
      content = typeof normalized === 'string' ? reference : [{ type: 'text', text: reference }];
      applied.add('repeats');
    } else {
      if (normalized !== message.content) applied.add('whitespace');
      if (options.cutToolOutputs && isToolResult(message)) content = mapText(normalized, cutToolOutput);
      if (content !== normalized) applied.add('tool-output');
    }
    out.push(content === message.content ? message : { ...message, content });
  }
  return { messages: out, origin, applied };
}
