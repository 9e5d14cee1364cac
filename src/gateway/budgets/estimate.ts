import { costUsd } from '../catalog/cost.ts';
import type { Call } from '../pipeline/call.ts';
import type { TokenUsage } from '../providers/types.ts';
import { estimatePromptTokens } from '../tokens.ts';
import type { Amounts } from './ledger.ts';

/**
 * What a call is expected to cost, reserved before it goes upstream:
 * - prompt tokens: the compacted messages and tools, estimated from their
 *   length (tokens.ts estimatePromptTokens: a third of the characters, which
 *   leans high; tokenizing a long prompt would cost milliseconds per call);
 * - output tokens: `max_completion_tokens`, else `max_tokens`, else
 *   `defaultOutputTokens`, never more than the model's context window
 *   leaves after the prompt, times `n`;
 * - USD: those tokens at the catalog price of the dearest model the call
 *   may go to (routing's choice or a fallback), all input priced as
 *   uncached. A model without a price counts 0 USD (its tokens still
 *   count).
 * Only what a counter needs is computed: counting a long prompt is the
 * costly part, and a key limited by requests alone skips it.
 */
export function estimateCall(call: Call, defaultOutputTokens: number, needsTokens: boolean): Amounts {
  if (!needsTokens) return { requests: 1, tokens: 0, usd: 0 };
  const body = call.body;
  const prompt = estimatePromptTokens(body.messages, body['tools']);
  const asked = positiveInt(body['max_completion_tokens']) ?? positiveInt(body['max_tokens']) ?? defaultOutputTokens;
  const choices = positiveInt(body['n']) ?? 1;
  let tokens = 0;
  let usd = 0;
  const targets = call.targets.length > 0 ? call.targets : call.target ? [call.target] : [];
  for (const target of targets) {
    const room = target.entry ? Math.max(0, target.entry.contextWindow - prompt) : asked;
    const output = Math.min(asked, room) * choices;
    tokens = Math.max(tokens, prompt + output);
    const usage: TokenUsage = { promptTokens: prompt, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: output, reasoningTokens: 0 };
    usd = Math.max(usd, costUsd(usage, target.entry) ?? 0);
  }
  return { requests: 1, tokens: tokens || prompt + asked * choices, usd };
}

/**
 * What a finished call really spent: its usage as the provider reported it
 * and its cost at the catalog price. A cache hit or a joined duplicate
 * spent nothing; a failed call spent what was reported, usually nothing.
 */
export function actualSpend(call: Call): Amounts {
  if (call.cacheStatus === 'hit' || call.cacheStatus === 'dedup') return { requests: 1, tokens: 0, usd: 0 };
  const usage = call.usage;
  return { requests: 1, tokens: usage ? usage.promptTokens + usage.completionTokens : 0, usd: call.costUsd ?? 0 };
}

function positiveInt(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}
