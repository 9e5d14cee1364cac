import { HttpProblem } from '../../../platform/errors.ts';
import type { Message } from '../../compaction/messages.ts';
import { COMPACT_MODE_TEXT, type CompactMode, parseCompactMode } from '../../compaction/mode.ts';
import { type CompactOptions, compactMessages, DEFAULT_COMPACT_OPTIONS, savedTokens } from '../../compaction/planner.ts';
import { rewriteMessages } from '../../compaction/rewrite.ts';
import { PromptTokenCounter } from '../../compaction/token-counts.ts';
import { DEFAULT_READ_TOOLS, STALE_DEFAULTS } from '../../settings/compaction.ts';
import { invalidHeader } from '../../openai-errors.ts';
import type { Call, Stage } from '../call.ts';

/**
 * Prompt compaction (docs/gateway-compaction.md), after the cheap refusals
 * (the model check, requests per minute) and before routing, so that the
 * cache key and everything after see the prompt as it will be sent.
 * The mode: X-Gateway-Compact, else the tenant's `settings.compaction.default`,
 * else GATEWAY_COMPACT_DEFAULT. `off` does nothing at all (the body goes on
 * as the same object). What it removed is counted with the token counter
 * (src/gateway/tokens.ts); what that saved, against the client's own request
 * sent directly, is the savings stage's to say once the call has been made
 * (stages/savings.ts), from the client's messages kept on the call.
 */
export function compactionStage(gatewayDefault: CompactMode): Stage {
  const counter = new PromptTokenCounter();
  // Not an async function: a call that compaction leaves as it is (most) goes on with no promise of this stage's own.
  return function compactPrompt(call, next) {
    // A surface whose content compaction does not know yet is sent as its client wrote it.
    if (!call.surface.stages.compaction) return next();
    let compacted: ReturnType<typeof compactMessages>;
    try {
      const mode = modeOf(call, gatewayDefault);
      if (mode.kind === 'off') return next();
      const options = optionsOf(call);
      if (textLength(call.body.messages) > LONG_PROMPT) return compactLongPrompt(call, next, mode, counter, options);
      compacted = compactMessages(call.body.messages as Message[], call.body.tools, mode, counter, options);
      if (compacted.unmet !== undefined && mode.kind === 'budget') throw budgetUnreachable(mode.tokens, compacted.unmet);
    } catch (err) {
      return Promise.reject(err);
    }
    if (compacted.applied.length === 0) return next();
    return compactedCall(call, next, compacted, counter);
  };
}

/** Characters of message text past which the counts compaction needs are made first, a slice at a time. */
const LONG_PROMPT = 65_536;

/**
 * A long prompt: the token counts the planner will ask for are counted
 * first, handing the event loop back as it goes, so that the planner, which
 * counts synchronously, finds them all remembered instead of tokenizing
 * megabytes in one go (75 to 170 ms a megabyte, every other call held up
 * meanwhile). Every mode needs the client's messages (superseded-reads
 * weighs a replacement against the tokens after it; agent and above and
 * budgets count the whole prompt) and their whitespace-normalized forms;
 * aggressive and budgets also the tool outputs' cut forms. A message's final
 * form is one of these or a short gateway note.
 */
async function compactLongPrompt(
  call: Call,
  next: () => Promise<void>,
  mode: Exclude<CompactMode, { kind: 'off' }>,
  counter: PromptTokenCounter,
  options: CompactOptions,
): Promise<void> {
  const messages = call.body.messages as Message[];
  await counter.remember(messages, call.body.tools);
  await counter.remember(rewriteMessages(messages, { cutToolOutputs: false, repeats: false }).messages, undefined);
  if (mode.kind === 'aggressive' || mode.kind === 'budget') {
    await counter.remember(rewriteMessages(messages, { cutToolOutputs: true, repeats: false }).messages, undefined);
  }
  const compacted = compactMessages(messages, call.body.tools, mode, counter, options);
  if (compacted.unmet !== undefined && mode.kind === 'budget') throw budgetUnreachable(mode.tokens, compacted.unmet);
  if (compacted.applied.length === 0) return next();
  return compactedCall(call, next, compacted, counter);
}

/** The tenant's knobs (settings.compaction), the gateway's defaults where it sets none. */
function optionsOf(call: Call): CompactOptions {
  const c = call.tenant.settings.compaction;
  if (c === undefined || (c.read_tools === undefined && c.stale_trigger_tokens === undefined && c.stale_keep_results === undefined && c.stale_batch_tokens === undefined)) {
    return DEFAULT_COMPACT_OPTIONS;
  }
  return {
    readTools: new Set(c.read_tools ?? DEFAULT_READ_TOOLS),
    stale: {
      triggerTokens: c.stale_trigger_tokens ?? STALE_DEFAULTS.triggerTokens,
      keepResults: c.stale_keep_results ?? STALE_DEFAULTS.keepResults,
      batchTokens: c.stale_batch_tokens ?? STALE_DEFAULTS.batchTokens,
    },
  };
}

/** The characters of the messages' texts (strings and text parts). */
function textLength(messages: readonly unknown[]): number {
  let total = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (typeof content === 'string') total += content.length;
    else if (Array.isArray(content)) {
      for (const part of content) {
        const text = (part as { text?: unknown } | null)?.text;
        if (typeof text === 'string') total += text.length;
      }
    }
  }
  return total;
}

async function compactedCall(call: Call, next: () => Promise<void>, compacted: ReturnType<typeof compactMessages>, counter: PromptTokenCounter): Promise<void> {
  const client = call.body.messages;
  let messages: readonly unknown[] = compacted.messages;
  let origin: readonly number[] = compacted.origin;
  let applied: readonly string[] = compacted.applied;
  let saved = compacted.savedTokens;
  // A surface of another format writes the change into its own request; what it cannot carry is undone here too, so
  // that what the stages count and claim is what is sent.
  const kept = call.surface.compacted?.({ messages, origin });
  if (kept !== undefined && kept.messages !== messages) {
    ({ messages, origin } = kept);
    applied = keptStrategies(client, compacted, kept);
    if (applied.length === 0) return next();
    saved = savedTokens(client, messages, origin, counter);
  }
  call.clientMessages = client;
  call.compactionOrigin = origin;
  call.body = { ...call.body, messages: messages as unknown[] };
  call.compaction = applied.join(',');
  call.compactionSavedTokens = saved;
  call.tokensSaved += saved;
  await next();
}

/** The strategies whose changes a surface kept: those of the messages still changed, and drop-turns while a message is still dropped. */
function keptStrategies(client: readonly unknown[], compacted: ReturnType<typeof compactMessages>, kept: { messages: readonly unknown[]; origin: readonly number[] }): string[] {
  const by = new Map<number, readonly string[]>();
  for (let k = 0; k < compacted.origin.length; k++) {
    const strategies = compacted.changedBy[k];
    if (strategies !== undefined) by.set(compacted.origin[k]!, strategies);
  }
  const present = new Set<string>();
  for (let k = 0; k < kept.origin.length; k++) {
    const i = kept.origin[k]!;
    if (kept.messages[k] !== client[i]) for (const s of by.get(i) ?? []) present.add(s);
  }
  if (kept.origin.length < client.length) present.add('drop-turns');
  return compacted.applied.filter((s) => present.has(s));
}

function modeOf(call: Call, gatewayDefault: CompactMode): CompactMode {
  const header = call.headers['x-gateway-compact'];
  if (header !== undefined) {
    const mode = typeof header === 'string' ? parseCompactMode(header) : undefined;
    if (!mode) throw invalidHeader('X-Gateway-Compact', `must be ${COMPACT_MODE_TEXT}, sent once.`);
    return mode;
  }
  const setting = call.tenant.settings.compaction?.default;
  return (setting === undefined ? undefined : parseCompactMode(setting)) ?? gatewayDefault;
}

/** A budget below what compaction may never remove: refused before anything is sent or paid for. */
function budgetUnreachable(budget: number, minimum: number): HttpProblem {
  return new HttpProblem(
    400,
    'compaction_budget_unreachable',
    `The prompt cannot be compacted to its budget of ${budget} tokens (X-Gateway-Compact, or the tenant's default): ${minimum} remain with every droppable turn gone ` +
      '(the system prompt, tool definitions, first and latest user messages and the last exchange are always kept). Raise the budget or send a shorter history.',
    { type: 'invalid_request_error' },
  );
}
